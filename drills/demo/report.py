"""What the demo found (:class:`DemoReport`) and its console rendering (:func:`render`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from drills.demo.fleet import CRASH_AFTER_EFFECT, LOST_RESPONSE
from oncelog.cli import query_cmd
from oncelog.query.models import StepStatus, SuspectedDuplicate, TimelineEntry
from oncelog.settings import Settings

#: The run whose timeline page the demo points to: a replay, a reclaim, a fenced straggler.
TIMELINE_RUN = CRASH_AFTER_EFFECT[0]


@dataclass(frozen=True)
class FleetFacts:
    """How the sample fleet's runs went: each list holds ``run/step`` names, in order."""

    runs: int
    steps_done: int
    replayed: tuple[str, ...]  # a retry got the recorded result back
    reclaimed: tuple[str, ...]  # a lease lapsed and another worker took the step over
    reconciled: tuple[str, ...]  # a reclaimer found the effect applied downstream
    fenced: tuple[str, ...]  # a zombie's late completion was refused


@dataclass(frozen=True)
class VerifyFacts:
    """What ``oncelog verify`` compared after the run, and every difference."""

    refolded: int
    compared_snapshots: int
    compared_live: int | None
    differences: tuple[str, ...]


@dataclass(frozen=True)
class DemoReport:
    """Everything the demo shows: the console output is :func:`render` of this."""

    bootstrap: str
    topic_prefix: str
    db_path: Path
    fleet: FleetFacts
    crash_timeline: tuple[TimelineEntry, ...]  # the channel whose worker died after charging
    lost_response: tuple[StepStatus, StepStatus]  # just before and at the lost completion
    duplicates: tuple[SuspectedDuplicate, ...]
    effects_applied: Mapping[str, int]  # downstream: applied effects per idempotency key
    verify: VerifyFacts
    broker_started_here: bool = False
    seconds: float = 0.0
    serve_settings: Settings | None = None  # what its `oncelog serve` ran with

    @property
    def timeline_url(self) -> str:
        """The timeline page of :data:`TIMELINE_RUN` on the demo's ``oncelog serve``."""
        port = 0 if self.serve_settings is None else self.serve_settings.http_port
        return f"http://127.0.0.1:{port}/ui/runs/{TIMELINE_RUN}"

    @property
    def effects_by_count(self) -> dict[int, int]:
        """How many idempotency keys were applied once, twice, ...: ``{1: 60}`` is the goal."""
        return dict(Counter(self.effects_applied.values()))

    @property
    def effects_fired_once(self) -> bool:
        """Every external effect the fleet asked for was applied exactly once."""
        return bool(self.effects_applied) and set(self.effects_applied.values()) == {1}

    @property
    def verify_ok(self) -> bool:
        """The refold, the snapshots and the live file agree."""
        return not self.verify.differences

    @property
    def ok(self) -> bool:
        """What ``make demo`` promises: effects once and a clean verify."""
        return self.effects_fired_once and self.verify_ok


def render(report: DemoReport, console: Console) -> None:
    """Print the report the way ``make demo`` shows it, CLI tables included."""
    console.print(f"broker {report.bootstrap}; topics {report.topic_prefix}.*; "
                  f"DuckDB {report.db_path} (removed when the demo ends)")  # fmt: skip
    fleet = report.fleet
    console.print(
        f"fleet: {fleet.steps_done} steps done; reclaimed {list(fleet.reclaimed)}; reconciled "
        f"{list(fleet.reconciled)}; replayed {list(fleet.replayed)}; fenced {list(fleet.fenced)}"
    )
    run, step = CRASH_AFTER_EFFECT
    console.rule(f"timeline of {run} (its worker crashed after charging, step {step})")
    query_cmd.print_timeline(report.crash_timeline, channel_id=run)
    run, step = LOST_RESPONSE
    for status in report.lost_response:
        console.rule(f"oncelog status {run} {step} --as-of {status.as_of}")
        query_cmd.print_status(status)
    console.rule("oncelog duplicates")
    query_cmd.print_duplicates(report.duplicates)
    console.rule("downstream")
    console.print(f"external effects applied, by count per idempotency key: "
                  f"{report.effects_by_count}")  # fmt: skip
    _render_verify(report.verify, console)
    if report.broker_started_here:
        console.print("the local broker the demo started stops when the demo ends")
    console.print(f"demo finished in {report.seconds:.0f} s")


def _render_verify(verify: VerifyFacts, console: Console) -> None:
    console.rule("oncelog verify")
    for line in verify.differences:
        console.print(f"DIFF {line}")
    console.print(
        f"refolded {verify.refolded} requests; {verify.compared_snapshots} snapshots and "
        f"{verify.compared_live} live executions compared"
    )
    if verify.differences:
        console.print("[bold red]verify FAILED[/bold red]")
    else:
        console.print("[bold green]verify OK[/bold green]")
