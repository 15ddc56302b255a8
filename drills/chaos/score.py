"""Score the runs: duplicate effects and lost steps per cell x crash point, and the cross-check.

- A duplicate is one extra application of a step's effect: the downstream's
  count for that step's operation (over every key) minus one.
- A lost step is a step the retry left without a result: not recorded by the
  retry, not completed in the ledger (ledger strategies), or, for an external
  step, never applied downstream.
- The cross-check: every duplicate of a ledger strategy must be visible in the
  ledger, either in ``suspected_duplicates()`` or in the reclaimed attempt's
  record (the retry's ``claim.previous``).
- The audit (issues 26, 40): each duplicate of a ledger strategy is flagged by
  ``oncelog duplicates`` (its operation's verdict ``double`` or ``possible``), with a
  ``stale_completion`` or an ``unknown_outcome`` nobody reconciled as its evidence;
  a duplicate whose operation is not flagged is ``unlisted``, which must be 0.
  ``unresolved`` counts the unknown outcomes no completion reconciled: 0 for a
  strategy that reconciles.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
from pydantic import SecretStr

from drills.chaos.model import cell_name
from drills.chaos.runner import Outcome
from drills.sample.downstream import DownstreamClient
from drills.sample.workflow import STEPS
from oncelog.query import queries
from oncelog.query.source import HttpSource
from oncelog.query.verdicts import FLAGGED
from oncelog.waiting import poll_until

_CATCH_UP_TIMEOUT_S = 120.0


@dataclass
class LedgerFacts:
    """What the projection says: finished (channel, step) pairs, and the audit of doubles."""

    finished: set[tuple[str, int]] = field(default_factory=set)
    suspected: set[str] = field(default_factory=set)  # operations the audit lists at all
    stale: set[str] = field(default_factory=set)  # ... as a stale_completion
    unreconciled: set[str] = field(default_factory=set)  # ... as an unknown outcome, not reconciled
    unresolved: Counter[str] = field(default_factory=Counter)  # channel -> such unknown outcomes
    flagged: set[str] = field(default_factory=set)  # ... with the verdict double or possible


def wait_caught_up(api_url: str, channels: Iterable[str], token: SecretStr | None = None) -> None:
    """Wait (bounded) until the projection shows each channel's last step finished.

    A retry hears its decision before the projection commits it to DuckDB.
    ``token``: the API's bearer token (``Settings.http_token``), if it has one.
    """
    source = HttpSource(api_url, token=token)
    deadline = time.monotonic() + _CATCH_UP_TIMEOUT_S
    for channel in channels:  # the committer thread runs right behind the decisions
        if not poll_until(deadline, _finished(source, channel)):
            return  # what never finished is counted as lost, not hidden


def _finished(source: HttpSource, channel: str) -> Callable[[], bool]:
    """Whether the channel's last step finished, asked of the API."""
    return lambda: source.status(channel, str(len(STEPS)), None).finished


def read_ledger(db_path: Path, channels: Iterable[str]) -> LedgerFacts:
    """Read the (stopped) projector's DuckDB file read-only."""
    facts = LedgerFacts()
    with duckdb.connect(str(db_path), read_only=True) as con:
        for d in queries.suspected_duplicates(con):
            if d.kind == "forged_or_unknown_token":
                continue
            facts.suspected.add(d.operation_id)
            if d.verdict in FLAGGED:
                facts.flagged.add(d.operation_id)
            if d.kind == "stale_completion":
                facts.stale.add(d.operation_id)
            elif d.reconciled is None:
                facts.unreconciled.add(d.operation_id)
                facts.unresolved[d.channel_id] += 1
        for channel in channels:
            for step in range(1, len(STEPS) + 1):
                if queries.step_status(con, channel, step=step).finished:
                    facts.finished.add((channel, step))
    return facts


def applied_counts(downstreams: dict[str, str]) -> dict[str, Counter[str]]:
    """Per downstream mode: applied effects per operation (summed over keys)."""
    counts: dict[str, Counter[str]] = {}
    for mode, url in downstreams.items():
        counts[mode] = Counter()
        for op, _key, n in DownstreamClient(url).stats()["applied"]:
            counts[mode][op] += n
    return counts


@dataclass
class Cell:
    """The tallies of one (strategy/mode, crash point) cell."""

    runs: int = 0
    duplicates: int = 0
    lost: int = 0
    duplicated_steps: int = 0
    explained: int = 0
    in_suspected: int = 0
    listed_stale: int = 0  # duplicates the audit lists as a stale completion
    listed_unknown: int = 0  # ... as an unknown outcome nobody reconciled
    unlisted: int = 0  # ... not at all
    unresolved: int = 0  # unknown outcomes no completion reconciled
    unknown_exits: int = 0  # exit codes the forkserver lost (the markers decided instead)
    anomalies: list[str] = field(default_factory=list)


def _step_lost(o: Outcome, step: int, applied: Counter[str], facts: LedgerFacts) -> bool:
    recorded = any(r["step"] == step and "result" in r for r in o.steps)
    in_ledger = not o.spec.ledger or (o.spec.channel_id, step) in facts.finished
    external = STEPS[step - 1][1] == "external"
    return not (recorded and in_ledger and (not external or applied[o.spec.op(step)] >= 1))


def _shown(o: Outcome, step: int, facts: LedgerFacts) -> tuple[bool, bool]:
    """(in ``suspected_duplicates()``, in the retry's reclaimed attempt's ``previous``)."""
    for record in o.steps:
        if record["step"] == step:
            return record["operation_id"] in facts.suspected, record["previous"] is not None
    return False, False


def score_run(o: Outcome, cell: Cell, applied: Counter[str], facts: LedgerFacts) -> None:
    """Add one run's duplicates, lost steps and cross-check to its cell."""
    cell.runs += 1
    cell.unknown_exits += (o.crash_exit == 255) + (o.retry_exit == 255)
    if not o.crashed:
        cell.anomalies.append(f"{o.spec.channel_id}: first attempt exited {o.crash_exit}, "
                              f"crash point reached: {o.crash_reached}")  # fmt: skip
    if not o.retried:
        cell.anomalies.append(f"{o.spec.channel_id}: retry exited {o.retry_exit}: {o.error}")
    cell.unresolved += facts.unresolved[o.spec.channel_id]
    for step in range(1, len(STEPS) + 1):
        extra = max(0, applied[o.spec.op(step)] - 1)
        cell.duplicates += extra
        if extra and o.spec.ledger:
            cell.duplicated_steps += 1
            suspected, previous = _shown(o, step, facts)
            cell.explained += suspected or previous
            cell.in_suspected += suspected
            _list(cell, extra, _operation(o, step), facts)
        cell.lost += _step_lost(o, step, applied, facts)


def _operation(o: Outcome, step: int) -> str | None:
    return next((r["operation_id"] for r in o.steps if r["step"] == step), None)


def _list(cell: Cell, extra: int, op: str | None, facts: LedgerFacts) -> None:
    """Where the audit lists ``extra`` duplicates of the operation ``op``: flagged (by its
    verdict) with a stale completion or an unreconciled unknown outcome, or not at all."""
    if op not in facts.flagged:
        cell.unlisted += extra
    elif op in facts.stale:
        cell.listed_stale += extra
    elif op in facts.unreconciled:
        cell.listed_unknown += extra
    else:
        cell.unlisted += extra


def score(
    outcomes: Sequence[Outcome], counts: dict[str, Counter[str]], facts: LedgerFacts
) -> dict[str, dict[str, Cell]]:
    """Tally every run into its (cell, crash point)."""
    cells: dict[str, dict[str, Cell]] = {}
    for o in outcomes:
        name = cell_name(o.spec.strategy, o.spec.mode)
        cell = cells.setdefault(name, {}).setdefault(o.spec.point, Cell())
        score_run(o, cell, counts[o.spec.mode], facts)
    return cells


def matrix(cells: dict[str, dict[str, Cell]]) -> dict[str, Any]:
    """The matrix as JSON: duplicates, lost and runs per cell x crash point; for a ledger
    strategy, where the audit lists the duplicates and its unresolved unknown outcomes."""
    out: dict[str, Any] = {}
    for name, points in cells.items():
        out[name] = {}
        for p, c in points.items():
            entry = {"duplicates": c.duplicates, "lost": c.lost, "runs": c.runs}
            if not name.startswith("naive/"):
                entry |= {"stale_completion": c.listed_stale,
                          "unknown_outcome_unreconciled": c.listed_unknown,
                          "unlisted": c.unlisted, "unresolved_unknown": c.unresolved}  # fmt: skip
            out[name][p] = entry
    return out


def audit_totals(cells: dict[str, dict[str, Cell]]) -> dict[str, dict[str, int]]:
    """Per ledger strategy: duplicates the audit does not list, and unknown outcomes no
    completion reconciled (both summed over the crash points)."""
    ledger = {n: p for n, p in cells.items() if not n.startswith("naive/")}
    return {
        "unlisted_duplicates": {n: sum(c.unlisted for c in p.values()) for n, p in ledger.items()},
        "unresolved_unknown_outcomes": {
            n: sum(c.unresolved for c in p.values()) for n, p in ledger.items()
        },
    }


def cross_check(cells: dict[str, dict[str, Cell]]) -> dict[str, Any]:
    """Per ledger cell x point: duplicated steps and how many the ledger shows."""
    return {
        name: {p: {"duplicated_steps": c.duplicated_steps, "in_ledger": c.explained,
                   "in_suspected_duplicates": c.in_suspected}
               for p, c in points.items()}
        for name, points in cells.items() if not name.startswith("naive/")
    }  # fmt: skip


def anomalies(cells: dict[str, dict[str, Cell]]) -> list[str]:
    """Every run whose crash or retry did not go as planned."""
    return [a for points in cells.values() for c in points.values() for a in c.anomalies]
