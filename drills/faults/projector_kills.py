"""SIGKILL the projector at random moments under load, restart it, and check the log.

After the run: no decision or snapshot republished for the same request differs
from its first publication, every request on the log has a decision, and
``verify`` finds no difference.
"""

from __future__ import annotations

import random
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from drills.faults.drill import Load, LogCheck, check_log, settle, start_serve
from drills.history.check import Verdict
from oncelog.producer.dispatch import Timeouts
from oncelog.projector.process import stop as stop_serve
from oncelog.settings import Settings


@dataclass
class KillReport:
    """What the drill did and found."""

    kills: int = 0
    completed_calls: int = 0
    typed_errors: dict[str, int] = field(default_factory=dict)
    untyped_errors: list[str] = field(default_factory=list)
    log: LogCheck = field(default_factory=LogCheck)
    history: Verdict | None = None  # the load's calls, checked linearizable per operation
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Nothing lost, nothing divergent, verify clean, no untyped error, a linearizable
        history."""
        log = self.log
        unchecked = self.history is None or not self.history.linearizable
        return not (log.undecided or log.divergent_decisions or log.divergent_snapshots
                    or log.verify_differences or self.untyped_errors or unchecked)  # fmt: skip


def projector_kill_drill(
    settings: Settings, workdir: Path, kills: int, seed: int = 3
) -> KillReport:
    """Run ``kills`` SIGKILL/restart rounds of ``oncelog serve`` under a claim+complete load."""
    rng = random.Random(seed)
    db, log = workdir / "live.duckdb", workdir / "serve.log"
    report = KillReport()
    began = time.monotonic()
    load = Load(settings, Timeouts(total_s=300, resend_after_s=5), history_dir=workdir / "history")
    load.start()
    for _ in range(kills):
        proc = start_serve(settings, db, log)
        # A random moment: during start-up, a restore, a fold, a publish or a commit.
        time.sleep(rng.uniform(0.3, 3.0))  # the fault schedule, not a synchronisation
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        report.kills += 1
    final = start_serve(settings, db, log)
    time.sleep(2.0)  # let the load run on a healthy projector for a moment
    load.finish()
    settle(settings, Timeouts(total_s=120, resend_after_s=5))
    stop_serve(final)
    report.completed_calls = len(load.completed)
    report.typed_errors = dict(load.typed_errors)
    report.untyped_errors = load.untyped_errors
    report.log = check_log(settings, db, workdir / "scratch.duckdb")
    report.history = load.check_history()
    report.seconds = time.monotonic() - began
    return report
