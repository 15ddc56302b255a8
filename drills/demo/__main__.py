"""``make demo``: broker, topics, ``oncelog serve``, a sample fleet, then the answers.

It starts the local broker (unless ``ONCELOG_BOOTSTRAP_SERVERS`` is set or one runs
already), creates a fresh topic set, starts the projector with its query API as a
subprocess, runs 20 workflows x 6 steps against a downstream that honours
idempotency keys, with a crash after an effect, a lost completion response and a
paused "zombie" worker injected; then asks the ledger for a timeline, ``status`` as
of two offsets and the suspected duplicates, the downstream for its effect counts,
and runs ``verify``; prints the :class:`DemoReport` and the URL of the run's timeline
page. In a terminal it starts ``serve`` again on the same file and port and keeps it
(and the broker) up until Enter; without one it stops what it started at once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from rich.console import Console

from drills.demo.fleet import CRASH_AFTER_EFFECT, LOST_RESPONSE, FleetReport, run_fleet
from drills.demo.report import DemoReport, FleetFacts, VerifyFacts, render
from drills.sample import downstream
from drills.sample.workflow import STEPS
from oncelog.broker.local import broker_for_run
from oncelog.kafka.reader import topic_ends
from oncelog.net import free_port
from oncelog.projector import process
from oncelog.projector.rebuild import verify
from oncelog.projector.store import Store
from oncelog.query.catch_up import wait_until_folded
from oncelog.query.models import StepStatus
from oncelog.query.source import HttpSource
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

RUNS = 20
WORKERS = 4
_CATCH_UP_TIMEOUT_S = 60.0


def run_demo(
    base: Settings,
    then: Callable[[DemoReport], None] | None = None,
    workdir: Path | None = None,
) -> DemoReport:
    """Run the whole demo on ``base``'s broker (or the local one) and report what it found.

    ``then`` gets the report while the broker is still up (``main`` prints it there and
    may keep the timeline page served). The run's files (its DuckDB file and serve's
    log) go in ``workdir``, which the caller owns; without one, in a temporary
    ``oncelog-demo-*`` folder that is removed at the end, whatever happened.
    """
    began = time.monotonic()
    tmp = workdir or Path(tempfile.mkdtemp(prefix="oncelog-demo-"))
    try:
        with broker_for_run(base) as broker:  # stopped afterwards only if started here
            report = dataclasses.replace(
                _run(base, broker.bootstrap, tmp),
                broker_started_here=broker.started_here,
                seconds=time.monotonic() - began,
            )
            if then is not None:
                then(report)
    finally:
        if workdir is None:
            shutil.rmtree(tmp, ignore_errors=True)
    return report


def _run(base: Settings, bootstrap: str, tmp: Path) -> DemoReport:
    """Topics, serve, downstream, fleet, answers, verify; files go in ``tmp``."""
    settings = base.model_copy(update={
        "bootstrap_servers": bootstrap, "topic_prefix": f"demo-{uuid.uuid4().hex[:8]}",
        "partitions": 3, "db_path": tmp / "ledger.duckdb", "http_port": free_port(),
    })  # fmt: skip
    create_topics(admin_client(settings, bootstrap), ledger_topics(settings))
    serve = _start_serve(settings, tmp / "serve.log")
    ds = downstream.start("honour")
    try:
        fleet = asyncio.run(run_fleet(settings, ds.url, runs=RUNS, workers=WORKERS))
        source = HttpSource(f"http://127.0.0.1:{settings.http_port}", token=settings.http_token)
        _wait_caught_up(settings, source)
        crash_run, _ = CRASH_AFTER_EFFECT
        timeline = tuple(source.timeline(crash_run, 1000))
        lost_response = _lost_response(source)
        duplicates = tuple(source.duplicates(100))
        effects = _effects_applied(ds)
    finally:
        process.stop(serve)  # SIGTERM: it commits what it folded, then lets go of DuckDB
        ds.stop()
    return DemoReport(
        bootstrap=bootstrap, topic_prefix=settings.topic_prefix, db_path=settings.db_path,
        fleet=_fleet_facts(fleet), crash_timeline=timeline, lost_response=lost_response,
        duplicates=duplicates, effects_applied=effects, verify=_verify(settings, tmp),
        serve_settings=settings,
    )  # fmt: skip


def _start_serve(settings: Settings, log: Path) -> subprocess.Popen[bytes]:
    proc = process.start_serve(settings, log)
    process.wait_http(proc, f"http://127.0.0.1:{settings.http_port}/healthz", log)
    return proc


def _wait_caught_up(settings: Settings, source: HttpSource) -> None:
    """Wait (bounded) until the projection has committed every request on the log now.

    The projector answers before it commits (once a second), so the fleet may be done
    before the query API shows all of it.
    """
    assert settings.bootstrap_servers is not None
    kafka = settings.kafka_config(settings.bootstrap_servers)
    targets = topic_ends(kafka, settings.requests_topic)
    wait_until_folded(source, targets, timeout_s=_CATCH_UP_TIMEOUT_S)


def _fleet_facts(fleet: FleetReport) -> FleetFacts:
    return FleetFacts(
        runs=RUNS, steps_done=fleet.steps_done, replayed=tuple(fleet.replayed),
        reclaimed=tuple(fleet.reclaimed), reconciled=tuple(fleet.reconciled),
        fenced=tuple(fleet.fenced),
    )  # fmt: skip


def _effects_applied(ds: downstream.Downstream) -> dict[str, int]:
    """Applied effects per idempotency key, as the downstream counted them."""
    per_key: Counter[str] = Counter()
    for _, key, count in ds.ledger.stats()["applied"]:
        per_key[key] += count
    return dict(per_key)


def _lost_response(source: HttpSource) -> tuple[StepStatus, StepStatus]:
    """The status of the step whose completion answer was lost, just before and at it."""
    run, step = LOST_RESPONSE
    rows = [r for r in source.timeline(run, 1000) if r.key_name == f"step-{step}"]
    complete = next(r.offset for r in rows if r.kind == "complete")
    return source.status(run, str(step), complete - 1), source.status(run, str(step), complete)


def _verify(settings: Settings, tmp: Path) -> VerifyFacts:
    assert settings.bootstrap_servers is not None
    kafka = settings.kafka_config(settings.bootstrap_servers)
    with Store(settings.db_path, read_only=True) as live:
        checked = verify(settings, kafka, tmp / "scratch.duckdb", live)
    return VerifyFacts(
        checked.refolded, checked.compared_snapshots, checked.compared_live,
        tuple(checked.differences),
    )  # fmt: skip


def in_a_terminal(stdin: TextIO, stdout: TextIO) -> bool:
    """Both ends on a terminal: someone can read the URL and press Enter."""
    return stdin.isatty() and stdout.isatty()


def show_timeline(
    report: DemoReport,
    console: Console,
    *,
    interactive: bool,
    wait_for_enter: Callable[[str], object] = input,
) -> None:
    """Print the URL of the run's timeline page; ``interactive``: serve it until Enter.

    The demo's ``serve`` was stopped for ``verify`` (DuckDB has one writer process), so
    it starts again on the same file and port; it resumes from its committed positions.
    Without a terminal nothing waits, so tests and CI never block here.
    """
    url = report.timeline_url
    if not interactive or report.serve_settings is None:
        console.print(f"run timeline: {url} (served while the demo runs in a terminal)")
        return
    settings = report.serve_settings
    serve = _start_serve(settings, settings.db_path.parent / "serve.log")
    try:
        console.print(f"run timeline: {url}")
        wait_for_enter("oncelog serve and the broker stay up: press Enter to stop ")
    except (EOFError, KeyboardInterrupt):
        pass  # stdin closed or Ctrl-C: stop as after Enter
    finally:
        process.stop(serve)


def main() -> DemoReport:
    """Run the demo on the environment's settings, print its report, and return it."""
    console = Console(highlight=False, soft_wrap=True)
    console.print(f"running {RUNS} workflows x {len(STEPS)} steps on {WORKERS} workers ...")
    interactive = in_a_terminal(sys.stdin, sys.stdout)

    def finish(report: DemoReport) -> None:
        render(report, console)
        show_timeline(report, console, interactive=interactive)

    return run_demo(Settings(), then=finish)


if __name__ == "__main__":
    if not main().ok:
        raise SystemExit(1)
