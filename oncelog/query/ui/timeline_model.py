"""What the run timeline page shows, built from query answers. Pure: no I/O, no clock.

The input is what the read-only API answers for one channel (:class:`RunData`): its
requests in log order (``/v1/timeline``), every state version of each of its
operations (``/v1/history``) and, for an "as of" view, each step's status at that
point (``/v1/status?as_of=``, the time-travel query). The output (:class:`RunView`)
is one :class:`StepRow` a step: its marks (one per request, classified by
:func:`mark_kind`), its leases (grant to deadline, with heartbeats extending it) and
its state; the renderer only draws it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from oncelog.identity.validation import is_ascii_number
from oncelog.query.models import StepStatus, TimelineEntry, Version
from oncelog.query.verdicts import (
    STALE_COMPLETION,
    UNKNOWN_OUTCOME,
    UNRECORDABLE,
    UNRECORDABLE_RESULT,
    item_verdict,
    worst,
)

# Each mark kind: its legend text. The keys are the pages' stable ``data-kind`` values.
MARK_KINDS: Final = {
    "claim": "claim (first grant)",
    "heartbeat": "heartbeat (lease extended)",
    "complete": "completion",
    "fail": "failure",
    "reclaim": "reclaim (lease lapsed, new epoch)",
    "unknown": "reclaim of a silent attempt: its outcome unknown (a possible duplicate effect "
    "unless the reclaimer reconciled it)",
    "replay": "replay (recorded result returned)",
    "fenced": "fenced late completion: its effect ran (a double unless the next holder found it)",
    "stale": "refused stale request",
    "cancel": "cancel requested",
    "release": "release",
    "expired": "result expired",
    "result-expired": "claim after the result expired",
    "in-progress": "claim while held (wait)",
    "inherit": "inherited by a fork (completed in the parent branch before the fork)",
    "adopt": "taken from another branch (the same call completed there: not run again)",
    "awaiting-approval": "intent recorded: awaiting a person's approval (nothing granted)",
    "approved": "approved by a person (the next claim is granted)",
    "denied": "denied by a person (terminal, with its reason)",
    "approval-expired": "approval expired (undecided by its deadline)",
    "approval-refused": "refused: the requesting worker may not approve its own intent",
    "other": "other answer (conflict, get, early sweep)",
}

_BY_OUTCOME: Final = {
    ("claim", "claimed"): "claim",
    ("claim", "reclaimed"): "reclaim",
    ("claim", "replayed"): "replay",
    ("claim", "in_progress"): "in-progress",
    ("claim", "result_expired"): "result-expired",
    ("heartbeat", "heartbeat_ok"): "heartbeat",
    ("complete", "completed"): "complete",
    ("fail", "failed"): "fail",
    ("release", "released"): "release",
    ("cancel", "cancel_requested"): "cancel",
    ("sweep", "expired"): "expired",
    ("claim", "awaiting_approval"): "awaiting-approval",
    ("approve", "approved"): "approved",
    ("deny", "denied"): "denied",
    ("approve", "approval_refused"): "approval-refused",
    ("deny", "approval_refused"): "approval-refused",
}
# The approval a step's lane shows: the last of these marks says where its intent stands.
_APPROVAL_KINDS: Final = frozenset(
    {"awaiting-approval", "approved", "denied", "approval-expired", "approval-refused"}
)
_GRANTS: Final = frozenset({"claimed", "reclaimed"})
_STEP_PREFIX: Final = "step-"


@dataclass(frozen=True)
class AsOf:
    """The point a view shows the run at: an offset of the channel's partition, or a time."""

    offset: int | None = None
    time_ms: int | None = None

    def includes(self, offset: int, time_ms: int) -> bool:
        """Was a record at ``offset`` / ``time_ms`` on the log at this point?"""
        if self.offset is not None:
            return offset <= self.offset
        return self.time_ms is None or time_ms <= self.time_ms


@dataclass(frozen=True)
class RunData:
    """The query answers one run page is built from."""

    channel: str
    requests: Sequence[TimelineEntry]
    versions: Mapping[str, Sequence[Version]]  # operation id -> its versions, oldest first
    truncated: bool = False
    as_of: AsOf | None = None
    statuses: Mapping[str, StepStatus] | None = None  # key name -> status as of the point


@dataclass(frozen=True)
class Mark:
    """One request of a step, as the referee judged it."""

    ident: str  # unique in the page: "m<partition>-<offset>"
    kind: str  # a key of MARK_KINDS
    entry: TimelineEntry
    made: Version | None  # the state version this request made, if it changed the state
    stale_grant: Version | None = None  # a fenced request's own (earlier) grant
    settled_by: TimelineEntry | None = None  # how the attempt that took over ended

    @property
    def evidence(self) -> str | None:
        """The audit item kind this mark is (``unknown_outcome``, ...), or None."""
        e = self.entry
        if self.kind == "unknown":
            return UNKNOWN_OUTCOME
        if self.kind == "fenced":
            return STALE_COMPLETION
        fenced_failure = self.kind == "stale" and e.kind == "fail" and e.epoch is not None
        if fenced_failure and e.error_code == UNRECORDABLE:
            return UNRECORDABLE_RESULT
        return None

    @property
    def verdict(self) -> str | None:
        """This item's verdict (:func:`oncelog.query.verdicts.item_verdict`); None if no item."""
        evidence = self.evidence
        if evidence is None:
            return None
        s = self.settled_by
        if s is None:
            return item_verdict(evidence, None, None)
        settled = "completed" if s.kind == "complete" else "failed"
        return item_verdict(evidence, settled, s.reconciled, s.error_code)

    @property
    def note(self) -> str | None:
        """Why this mark matters, in words, when it is not self-evident."""
        e = self.entry
        if self.kind in _APPROVAL_KINDS:
            return approval_words(self.kind, e)
        if self.kind in ("inherit", "adopt"):
            how = "taken from branch" if self.kind == "adopt" else "inherited from branch"
            return f"{how} {e.from_channel}"
        if self.kind == "unknown":
            return f"outcome unknown: epoch {e.state_epoch} ({e.state_worker_id}) " + _settled(
                self.settled_by
            )
        if self.evidence is None:
            return None
        held = f"epoch {e.state_epoch}" if e.state_epoch is not None else "a newer grant"
        who = "a stale holder" if e.epoch is None else f"epoch {e.epoch} ({e.worker_id})"
        did = "completed" if self.kind == "fenced" else "ran the tool (its result unrecordable)"
        return f"{_VERDICT_WORDS[self.verdict or '']}: {who} {did} after {held} took over"


def approval_words(kind: str, e: TimelineEntry) -> str:
    """What an approval mark says on the lane: the decision, who made it, and where."""
    words = {
        "awaiting-approval": "awaiting approval",
        "approved": f"approved by {e.approver} at position {e.partition}:{e.offset}",
        "denied": f"denied by {e.approver}: {e.reason}",
        "approval-refused": f"approval refused: {e.approver} may not approve their own intent",
    }
    return words.get(kind, "approval expired")


_VERDICT_WORDS: Final = {
    "double": "proven duplicate effect",
    "possible": "possible duplicate effect",
    "unsettled": "a late attempt's effect; the next holder has not finished",
    "single": "one effect: the next holder found it (reconciled)",
}


def _settled(entry: TimelineEntry | None) -> str:
    if entry is None:
        return "never reported; the next attempt has not finished"
    if entry.reconciled is not None:
        return f"never reported; the next attempt reconciled it: {entry.reconciled}"
    if entry.kind == "complete":
        return (
            "never reported, and the next attempt completed without reconciling: possible duplicate"
        )
    return "never reported, and the next attempt failed without reconciling: possible duplicate"


@dataclass(frozen=True)
class Lease:
    """One grant's lease: from the grant to its deadline (heartbeats move the deadline)."""

    epoch: int
    worker_id: str
    start_ms: int
    deadline_ms: int
    end_ms: int | None  # when the grant stopped holding (done, failed, released, regranted)

    @property
    def lapsed(self) -> bool:
        """Did the deadline pass while the grant still held the step?"""
        return self.end_ms is not None and self.deadline_ms < self.end_ms


@dataclass(frozen=True)
class StepRow:
    """One step (operation) of the run: its state at the point shown and its marks."""

    operation_id: str
    key_name: str
    tool_name: str | None
    effect: str | None  # "pure", "external", or None when no claim declared it
    status: str  # lower-case status, or "absent"
    last: Version | None  # the state version at the point shown
    marks: tuple[Mark, ...]
    leases: tuple[Lease, ...]

    @property
    def verdict(self) -> str | None:
        """The operation's audit verdict (the worst of its items'); None without items."""
        verdicts = [v for v in (m.verdict for m in self.marks) if v is not None]
        return worst(verdicts) if verdicts else None

    @property
    def approval(self) -> str | None:
        """Where the step's approval stands (its last decision mark's words); None if none.

        A refused self-approval decides nothing: the intent still awaits a decision.
        """
        marks = [m for m in self.marks if m.kind in _APPROVAL_KINDS]
        decided = [m for m in marks if m.kind != "approval-refused"]
        return decided[-1].note if decided else None


@dataclass(frozen=True)
class RunView:
    """The whole page's content: rows in step order, every mark in log order."""

    channel: str
    rows: tuple[StepRow, ...]
    marks: tuple[Mark, ...]  # every mark of every row, in log order (the time axis)
    truncated: bool
    as_of: AsOf | None

    def status_counts(self) -> dict[str, int]:
        """How many steps are in each status."""
        return dict(Counter(r.status for r in self.rows))

    def verdict_counts(self) -> dict[str, int]:
        """How many steps have each audit verdict (steps without audit items left out)."""
        return dict(Counter(r.verdict for r in self.rows if r.verdict is not None))

    def kinds_present(self) -> list[str]:
        """The mark kinds this run has, in legend order."""
        present = {m.kind for m in self.marks}
        return [k for k in MARK_KINDS if k in present]


def mark_kind(entry: TimelineEntry) -> str:
    """The ``data-kind`` of a request: what the referee's verdict means on the page."""
    if entry.outcome == "stale_claim":
        return "fenced" if entry.duplicate_effect_suspected else "stale"
    if entry.outcome_unknown:
        return "unknown"
    if entry.kind == "inherit" and entry.outcome == "inherited":
        return "adopt" if entry.adopted else "inherit"
    if entry.outcome == "approval_expired":  # any request meeting the passed deadline
        return "approval-expired"
    return _BY_OUTCOME.get((entry.kind, entry.outcome), "other")


def step_number(key_name: str) -> int | None:
    """``step-7`` -> 7; None for a named key such as ``charge:order-1``."""
    tail = key_name.removeprefix(_STEP_PREFIX)
    return int(tail) if tail != key_name and is_ascii_number(tail) else None


def build_view(data: RunData) -> RunView:
    """Rows and marks of ``data``, as of ``data.as_of`` (every request up to it)."""
    point = data.as_of
    shown = [r for r in data.requests if point is None or point.includes(r.offset, r.log_time_ms)]
    by_op: dict[str, list[TimelineEntry]] = {}
    for entry in shown:
        by_op.setdefault(entry.operation_id, []).append(entry)
    rows = []
    for op, entries in by_op.items():
        versions = [
            v
            for v in data.versions.get(op, ())
            if point is None or point.includes(v.valid_from_offset, v.log_time_ms)
        ]
        status = (data.statuses or {}).get(entries[0].key_name)
        rows.append(_row(op, entries, versions, status))
    rows.sort(key=_row_order)
    marks = sorted((m for r in rows for m in r.marks), key=lambda m: _log_order(m.entry))
    return RunView(data.channel, tuple(rows), tuple(marks), data.truncated, point)


def _row(
    op: str, entries: list[TimelineEntry], versions: list[Version], status: StepStatus | None
) -> StepRow:
    by_version = {v.version: v for v in versions}
    marks = tuple(_mark(e, by_version, versions, entries) for e in entries)
    last = versions[-1] if versions else None
    if status is not None:
        shown_status = status.status  # the time-travel query's answer for the point
    else:
        shown_status = last.status.lower() if last is not None else "absent"
    effect = last.effect if last is not None else next((e.effect for e in entries), None)
    return StepRow(
        operation_id=op,
        key_name=entries[0].key_name,
        tool_name=last.tool_name if last is not None else None,
        effect=effect,
        status=shown_status,
        last=last,
        marks=marks,
        leases=tuple(leases_of(versions)),
    )


def _mark(
    entry: TimelineEntry,
    by_version: Mapping[int, Version],
    all_: list[Version],
    entries: Sequence[TimelineEntry],
) -> Mark:
    kind = mark_kind(entry)
    made = by_version.get(entry.version) if entry.changed else None
    stale = settled = None
    if kind in ("fenced", "stale") and entry.token_fp is not None:
        stale = next((v for v in all_ if v.token_fp == entry.token_fp), None)
    ends = [e for e in entries if e.changed and e.kind in ("complete", "fail")]
    if kind == "unknown":  # the first end after the reclaim
        settled = next((e for e in ends if _log_order(e) > _log_order(entry)), None)
    elif kind in ("fenced", "stale") and entry.epoch is not None:  # the first by a later epoch
        epoch = entry.epoch
        settled = next((e for e in ends if e.epoch is not None and e.epoch > epoch), None)
    return Mark(f"m{entry.partition}-{entry.offset}", kind, entry, made, stale, settled)


def leases_of(versions: Sequence[Version]) -> list[Lease]:
    """Each grant's lease: it starts at the claim or reclaim and ends at the next version
    that is not a heartbeat of the same epoch; its deadline is the last one it had.
    """
    leases: list[Lease] = []
    current: Lease | None = None
    for v in versions:
        if v.outcome in _GRANTS:
            if current is not None:
                leases.append(_ended(current, v.log_time_ms))
            current = Lease(v.epoch, v.worker_id, v.log_time_ms, _deadline(v), None)
        elif current is not None and v.epoch == current.epoch and v.status == "CLAIMED":
            current = Lease(
                current.epoch, current.worker_id, current.start_ms, _deadline(v), None
            )  # a heartbeat (or a cancel request) while held: the deadline may move
        elif current is not None:
            leases.append(_ended(current, v.log_time_ms))
            current = None
    if current is not None:
        leases.append(current)
    return leases


def _deadline(v: Version) -> int:
    return v.lease_deadline_ms if v.lease_deadline_ms is not None else v.log_time_ms


def _ended(lease: Lease, at_ms: int) -> Lease:
    return Lease(lease.epoch, lease.worker_id, lease.start_ms, lease.deadline_ms, at_ms)


def _log_order(entry: TimelineEntry) -> tuple[int, int]:
    return entry.partition, entry.offset


def _row_order(row: StepRow) -> tuple[int, int, int, int]:
    """Numbered steps in step order, then named keys in the order they first appear."""
    first = row.marks[0].entry
    number = step_number(row.key_name)
    if number is not None:
        return 0, number, first.partition, first.offset
    return 1, 0, first.partition, first.offset
