"""Stop and restart the local broker under load.

While the broker is down the SDK must surface bounded, typed errors; afterwards
it resumes, the projector recovers by itself, and no request acknowledged to a
caller is lost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from drills.faults.drill import (
    Load,
    LogCheck,
    acknowledged_lost,
    check_log,
    settle,
    start_serve,
)
from drills.history.check import Verdict
from oncelog.broker.local import LocalBroker
from oncelog.producer.dispatch import Timeouts
from oncelog.projector.process import stop as stop_serve
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics


@dataclass
class BrokerReport:
    """What happened around the outage."""

    outage_s: float = 0.0
    calls_before: int = 0
    calls_during: int = 0  # completed + failed calls that ended while the broker was down
    errors_during: dict[str, int] = field(default_factory=dict)
    calls_after: int = 0
    untyped_errors: list[str] = field(default_factory=list)
    acknowledged: int = 0
    acknowledged_lost: int = 0
    projector_survived: bool = False
    log: LogCheck = field(default_factory=LogCheck)
    history: Verdict | None = None  # the load's calls, checked linearizable per operation


def broker_restart_drill(
    workdir: Path, outage_s: float = 6.0, phase_s: float = 4.0
) -> BrokerReport:
    """Run load, stop the broker for ``outage_s``, restart it, run load again, check.

    The broker is the drill's own (in ``workdir``), stopped at the end whatever happens.
    """
    broker = LocalBroker(Settings(bootstrap_servers=None, data_dir=workdir / "data"))
    try:
        return _drill(broker, workdir, outage_s, phase_s)
    finally:
        broker.stop()


def _drill(broker: LocalBroker, workdir: Path, outage_s: float, phase_s: float) -> BrokerReport:
    info = broker.start()
    settings = Settings(bootstrap_servers=info.bootstrap, topic_prefix="drill", partitions=3,
                        data_dir=workdir / "data")  # fmt: skip
    create_topics(admin_client(settings, info.bootstrap), ledger_topics(settings))
    db = workdir / "live.duckdb"
    serve = start_serve(settings, db, workdir / "serve.log")
    timeouts = Timeouts(total_s=3.0, resend_after_s=1.0)
    load = Load(settings, timeouts, threads=3, history_dir=workdir / "history")
    report = BrokerReport(outage_s=outage_s)
    try:
        _run_phases(broker, load, report, outage_s, phase_s)
        report.projector_survived = serve.poll() is None
        settle(settings, Timeouts(total_s=120, resend_after_s=5))
    finally:
        stop_serve(serve)
    report.untyped_errors = load.untyped_errors
    report.acknowledged = len(load.completed)
    report.acknowledged_lost = acknowledged_lost(db, load.completed)
    report.log = check_log(settings, db, workdir / "scratch.duckdb")
    report.history = load.check_history()
    return report


def _run_phases(
    broker: LocalBroker, load: Load, report: BrokerReport, outage_s: float, phase_s: float
) -> None:
    load.start()
    # Load on a healthy broker: at least phase_s, and until calls go through (a loaded
    # machine may need longer than phase_s for the first ones), bounded.
    time.sleep(phase_s)
    load.wait_for_calls(1)
    report.calls_before = len(load.completed)
    errors_before = dict(load.typed_errors)
    broker.stop()
    time.sleep(outage_s)
    report.calls_during = len(load.completed) - report.calls_before
    report.errors_during = {
        code: n - errors_before.get(code, 0) for code, n in load.typed_errors.items()
    }
    broker.start()
    mark = len(load.completed)
    time.sleep(phase_s * 2)
    load.wait_for_calls(mark + 1)  # the SDK resumed (bounded: the report shows it if not)
    load.finish()
    report.calls_after = len(load.completed) - mark
