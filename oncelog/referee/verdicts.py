"""The verdict helpers every rule of the fold shares: decisions, new versions, retry memory.

Private to :mod:`oncelog.referee`: :mod:`.fold`, :mod:`.approvals` and :mod:`.inherits`
build their answers with these, and nothing outside the package imports them (the
public names, :data:`RETRY_MEMORY_MS` and ``Result``, are re-exported by :mod:`.fold`).
Pure, like the fold: no clock, no randomness, no I/O.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

from oncelog.schemas.models import (
    BODY_KIND,
    Body,
    Claim,
    Complete,
    Decision,
    ExecutionState,
    Heartbeat,
    Outcome,
    RecentRequest,
    Release,
    Request,
    Status,
    Sweep,
)

RETRY_MEMORY_MS: Final = 15 * 60 * 1000
"""How long (in log time) a state remembers a request id, grants aside: one that changed
it, or a claim it answered ``in_progress``.

A client re-sends one request for at most its total call timeout (the SDK
caps it at 300 s), and a re-send may sit in the producer for at most
librdkafka's ``message.timeout.ms`` (300 s by default) before it is appended:
600 s in all, inside this window. The id that won each grant is kept for the
life of the state, whatever its age (docs/spec.md §4).
"""

PAYLOAD_FP_HEX: Final = 16
"""Hex digits of a request body's fingerprint in the retry memory."""

Result = tuple[ExecutionState | None, Decision]

GRANTS: Final = frozenset({Outcome.CLAIMED, Outcome.RECLAIMED})

_OUTCOME_OF_STATUS: Final = {
    Status.CLAIMED: Outcome.STATE_CLAIMED,
    Status.COMPLETED: Outcome.STATE_COMPLETED,
    Status.FAILED: Outcome.STATE_FAILED,
    Status.EXPIRED: Outcome.STATE_EXPIRED,
    Status.AWAITING_APPROVAL: Outcome.AWAITING_APPROVAL,
    Status.APPROVED: Outcome.APPROVED,
    Status.DENIED: Outcome.DENIED,
}


# A new state version copies the old one as a list and patches the changed fields by
# index, cheaper than ``state._replace`` (docs/performance.md, "Choices and what they
# bought"). The index comes from the model's own field list.
_STATE_INDEX: Final = {name: i for i, name in enumerate(ExecutionState._fields)}


def evolve(state: ExecutionState, changes: dict[str, Any]) -> ExecutionState:
    """``state`` with ``changes`` applied, as ``state._replace(**changes)`` would return."""
    values = list(state)
    for name, value in changes.items():
        values[_STATE_INDEX[name]] = value
    # What ``ExecutionState._make`` does, without its interpreted frame.
    new: ExecutionState = tuple.__new__(ExecutionState, values)
    return new


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex: a result's hash, a body's fingerprint."""
    return hashlib.sha256(data).hexdigest()


# --- decisions ---------------------------------------------------------------------

_DECISION_INDEX: Final = {name: i for i, name in enumerate(Decision._fields)}
# The defaults of the fields after ``epoch`` (``decide`` names the eight before it).
_DECISION_DEFAULTS: Final = tuple(
    Decision._field_defaults[name] for name in Decision._fields[_DECISION_INDEX["epoch"] + 1 :]
)


def decide(
    state: ExecutionState | None,
    request: Request,
    outcome: Outcome,
    t: int,
    changed: bool = False,
    **detail: Any,
) -> Decision:
    """A decision that reports ``state`` (the state after) alongside ``detail``."""
    # A detail may name the epoch itself (a fenced holder's).
    epoch = detail.pop("epoch", None if state is None else state.epoch)
    kind = BODY_KIND[type(request.body)]
    # The leading fields in Decision's order, the rare ones by name over their defaults,
    # made as ``Decision._make`` makes it: the constructor's ``__new__`` is an interpreted
    # frame, called for every request folded.
    values = [request.request_id, request.operation_id, kind, outcome, changed, t, state, epoch]
    values.extend(_DECISION_DEFAULTS)
    for name, value in detail.items():
        values[_DECISION_INDEX[name]] = value
    decision: Decision = tuple.__new__(Decision, values)
    return decision


def unchanged(state: ExecutionState | None, request: Request, outcome: Outcome, t: int) -> Result:
    """No change: judged, answered, nothing new to publish on the changelog."""
    return state, decide(state, request, outcome, t)


def answer_with_state(state: ExecutionState, request: Request, t: int) -> Result:
    """The "any other pair" row: an outcome naming the state, no change."""
    return state, decide(state, request, _OUTCOME_OF_STATUS[state.status], t)


def stale(state: ExecutionState, request: Request, t: int, suspected: bool = False) -> Result:
    return state, decide(
        state, request, Outcome.STALE_CLAIM, t, duplicate_effect_suspected=suspected
    )


def payload_fingerprint(body: Body) -> str:
    """A compact stand-in for what a request asks for, to tell a retry from a reused id.

    A claim counts by its request hash (params outside ``dedup_fields`` are
    volatile), a completion by its result's hash, a heartbeat by its lease and
    anything else by a hash of its ``repr`` (the kind and every field, stable
    across runs). At most 16 characters, and no hashing on the common paths.
    """
    if type(body) is Heartbeat:
        return "hb" if body.lease_ms is None else f"hb:{body.lease_ms}"
    if type(body) is Claim:
        return body.request_hash[:PAYLOAD_FP_HEX]
    if type(body) is Complete:
        return sha256_hex(body.result)[:PAYLOAD_FP_HEX]
    if type(body) is Release or type(body) is Sweep:
        return type(body).__name__
    return sha256_hex(repr(body).encode())[:PAYLOAD_FP_HEX]


def _remember(
    recent: tuple[RecentRequest, ...], entry: RecentRequest, t: int
) -> tuple[RecentRequest, ...]:
    """Add ``entry``; forget other entries older than the retry window, never a grant."""
    horizon = t - RETRY_MEMORY_MS
    # Entries are in log-time order: while the oldest is inside the window, all are
    # (the common case: no scan, no rebuild).
    if not recent or recent[0].log_time_ms > horizon:
        return (*recent, entry)
    kept = tuple(r for r in recent if r.log_time_ms > horizon or r.outcome in GRANTS)
    return (*kept, entry)


def commit(
    state: ExecutionState,
    request: Request,
    fp: str,
    outcome: Outcome,
    t: int,
    *,
    detail: dict[str, Any] | None = None,
    payload_fp: str | None = None,
    **changes: Any,
) -> Result:
    """Make a new state version and a decision with ``changed=True``.

    ``fp`` is the fingerprint of the request's token, kept in the retry memory.
    """
    epoch = changes.get("epoch", state.epoch)
    payload = payload_fingerprint(request.body) if payload_fp is None else payload_fp
    memo: RecentRequest = tuple.__new__(
        RecentRequest,
        (request.request_id, outcome, epoch, fp, payload, t, changes.get("worker_id", "")),
    )
    # ``changes`` is this call's own keyword dict: completing it in place is safe.
    changes["version"] = state.version + 1
    changes["updated_at_ms"] = t
    changes["recent"] = _remember(state.recent, memo, t)
    new = evolve(state, changes)
    return new, decide(new, request, outcome, t, True, **(detail or {}))


def grant_changes(body: Claim, fp: str, t: int) -> dict[str, Any]:
    """Everything a grant (first claim or reclaim) sets on the state."""
    return {
        "status": Status.CLAIMED,
        "tool_name": body.tool_name,
        "params": body.params,
        "effect": body.effect,
        "lease_ms": body.lease_ms,
        "retention_ms": body.retention_ms,
        "token_fp": fp,
        "worker_id": body.worker_id,
        "claimed_at_ms": t,
        "lease_deadline_ms": t + body.lease_ms,
        "last_heartbeat_ms": None,
        "cancel_requested": False,
        "cancel_reason": None,
        "error": None,
        "retryable": False,
        "released": False,
    }
