"""The whole experiment: environment, runs, ledger facts, scores and the expectations."""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drills.chaos import score
from drills.chaos.env import environment, stop_serve
from drills.chaos.model import AFTER_EFFECT, LEASE, NAIVE, NOT_IDEMPOTENT, RECONCILE, cell_name
from drills.chaos.runner import ChaosConfig, plan, run_all
from drills.history import record
from drills.history.check import Verdict, check
from oncelog.broker.local import resolve_bootstrap
from oncelog.net import free_port
from oncelog.settings import Settings


@dataclass
class ChaosReport:
    """The scored matrix and everything needed to judge it."""

    cells: dict[str, dict[str, score.Cell]]
    seconds: float
    config: ChaosConfig
    history: Verdict | None = None  # the ledger calls' history, checked (None: nothing recorded)

    @property
    def matrix(self) -> dict[str, Any]:
        """``{"<strategy>/<mode>": {"<point>": {"duplicates", "lost", "runs"}}}``."""
        return score.matrix(self.cells)

    @property
    def audit(self) -> dict[str, dict[str, int]]:
        """Per ledger strategy: unlisted duplicates and unresolved unknown outcomes."""
        return score.audit_totals(self.cells)

    @property
    def cross_check(self) -> dict[str, Any]:
        """Duplicated steps of ledger strategies and how many the ledger shows."""
        return score.cross_check(self.cells)

    @property
    def anomalies(self) -> list[str]:
        """Runs whose crash or retry did not go as planned."""
        return score.anomalies(self.cells)

    @property
    def linearizability(self) -> dict[str, Any]:
        """Operations checked, unknown ones, and whether the history is linearizable."""
        if self.history is None:
            return {"operations_checked": 0, "unknown": 0, "linearizable": True}
        return self.history.figures()

    def document(self) -> dict[str, Any]:
        """Everything, for the JSON file."""
        return {
            "matrix": self.matrix, "cross_check": self.cross_check, **self.audit,
            "linearizability": self.linearizability,
            "expectations_failed": failed_expectations(self), "anomalies": self.anomalies,
            "runtime_s": round(self.seconds, 1), "runs_per_cell": self.config.runs,
            "concurrency": self.config.concurrency,
            "unknown_exit_codes": sum(
                c.unknown_exits for points in self.cells.values() for c in points.values()
            ),
        }  # fmt: skip


def failed_expectations(report: ChaosReport) -> list[str]:
    """What each strategy claims to prevent, checked against the measured cells.

    Empty when all hold: no step lost with the ledger, every duplicate visible in it,
    lease-and-retry duplicating only after an effect, reconcile and key-passthrough never.
    """
    failed = []
    lease_naive = cell_name(LEASE, NOT_IDEMPOTENT)
    for name, points in report.cells.items():
        ledger = not name.startswith(f"{NAIVE}/")
        for point, c in points.items():
            where = f"{name} at {point}"
            if ledger and c.lost:
                failed.append(f"{where}: {c.lost} lost steps with the ledger")
            if c.duplicated_steps != c.explained:
                failed.append(f"{where}: {c.duplicated_steps - c.explained} duplicates the "
                              "ledger does not show")  # fmt: skip
            if name == lease_naive and point != AFTER_EFFECT and c.duplicates:
                failed.append(f"{where}: {c.duplicates} duplicates outside {AFTER_EFFECT}")
            if not name.startswith((f"{NAIVE}/", f"{LEASE}/")) and c.duplicates:
                failed.append(f"{where}: {c.duplicates} duplicates")
            if ledger and c.unlisted:
                failed.append(f"{where}: {c.unlisted} duplicates `oncelog duplicates` misses")
            if name.startswith(f"{RECONCILE}/") and c.unresolved:
                failed.append(f"{where}: {c.unresolved} unknown outcomes left unreconciled")
    if report.history is not None and not report.history.linearizable:
        failed.append(f"the history of ledger calls is not linearizable: see "
                      f"{report.history.visualization}")  # fmt: skip
    return failed + report.anomalies


def run_chaos(
    base: Settings,
    config: ChaosConfig,
    workdir: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> ChaosReport:
    """Run the matrix on one broker, one topic set, one serve and one downstream per mode.

    The broker must be running (configured or local): the caller owns its lifecycle.
    """
    began = time.monotonic()
    workdir = workdir or Path(tempfile.mkdtemp(prefix="oncelog-chaos-"))
    settings = base.model_copy(update={
        "bootstrap_servers": resolve_bootstrap(base),
        "topic_prefix": f"chaos-{uuid.uuid4().hex[:8]}", "partitions": 3,
        "db_path": workdir / "ledger.duckdb", "http_port": free_port(),
    })  # fmt: skip
    modes = {mode for _, mode in config.cells}
    with environment(settings, modes, workdir) as env:
        specs = plan(config, env, workdir)
        outcomes = run_all(specs, config.concurrency, progress)
        channels = [s.channel_id for s in specs if s.ledger]
        score.wait_caught_up(env.api_url, channels, env.settings.http_token)
        counts = score.applied_counts(env.downstreams)
        stop_serve(env)  # DuckDB has one writer: read the file once serve let go of it
        facts = score.read_ledger(settings.db_path, channels)
    cells = score.score(outcomes, counts, facts)
    history = check_history(workdir)
    return ChaosReport(cells, time.monotonic() - began, config, history)


def check_history(workdir: Path) -> Verdict | None:
    """Check every attempt's recorded calls as one history (per operation); None if none."""
    operations = record.load(workdir.glob("*.history.jsonl"))
    if not operations:
        return None
    return check(operations, workdir / "history.json")
