"""The row tuples of the projection's tables, column for column (:mod:`.tables`).

One definition for both writers: the live store builds rows out of its batch's audit
entries and snapshots, the bulk rebuild out of the values it folds, and the two must be
equal (``tests/integration/test_bulk_rebuild.py`` compares every table); a state version
reaches both as the :class:`ExecutionSnapshot` the executions topic carries. Enum members
go to Arrow as they are: a StrEnum is a str holding its value.

The builders are generated at import from the columns' ``source`` expressions, so a
column added to a layout (a new optional field, say) is filled without a line here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from oncelog.identity.tokens import token_fingerprint
from oncelog.projector.tables import EXECUTIONS, HISTORY, REQUESTS, Column
from oncelog.schemas.failures import failure_code
from oncelog.schemas.models import (
    Claim,
    Decision,
    ExecutionSnapshot,
    ExecutionState,
    Fail,
    Outcome,
    Request,
)

Row = tuple[Any, ...]


def row_builder(
    name: str, params: str, columns: tuple[Column, ...], prelude: str = ""
) -> Callable[..., Row]:
    """``def name(params)`` returning the tuple of the columns' ``source`` expressions."""
    lines = [f"def {name}({params}):"]
    if prelude:
        lines.append(f"    {prelude}")
    lines.append(f"    return ({''.join(f'{c.source}, ' for c in columns)})")
    scope: dict[str, Any] = {}
    exec(compile("\n".join(lines), f"<oncelog.projector.rows:{name}>", "exec"), scope)
    builder: Callable[..., Row] = scope[name]
    return builder


_AUDIT_PARAMS: Final = (
    "partition, offset, log_time_ms, request, decision, "
    "epoch, worker, token_fp, effect, state_epoch, state_worker, previous, error_code"
)
_AUDIT: Final = row_builder("audit_row", _AUDIT_PARAMS, REQUESTS)
_HISTORY: Final = row_builder("history_row", "snap, blob", HISTORY, "state = snap.state")
_EXECUTION: Final = row_builder("execution_row", "snap", EXECUTIONS, "state = snap.state")
_GRANTS: Final = (Outcome.CLAIMED, Outcome.RECLAIMED)


def audit_row(
    partition: int, offset: int, log_time_ms: int, request: Request, decision: Decision
) -> Row:
    """A ``requests`` row: one folded request, its sender's attempt, and its answer."""
    body, state = request.body, decision.state
    token_fp = token_fingerprint(request.claim_token) or None  # the token stays on the log
    previous = decision.previous if decision.changed else None  # set by a reclaim only
    if state is None:
        epoch, worker, effect = None, None, None
        state_epoch, state_worker = None, None
    else:
        epoch, worker = sender_attempt(state, token_fp)
        effect = state.effect
        if previous is not None:  # the reclaim met the attempt it superseded
            state_epoch, state_worker = previous.epoch, previous.worker_id
        elif decision.changed and decision.outcome is Outcome.CLAIMED:  # met no state
            state_epoch, state_worker = None, None
        else:  # no other request changes the epoch or the holder
            state_epoch, state_worker = state.epoch, state.worker_id
    if type(body) is Claim:  # the claim names its effect, and its worker even ungranted
        worker, effect = body.worker_id, body.effect
    return _AUDIT(
        partition,
        offset,
        log_time_ms,
        request,
        decision,
        epoch,
        worker,
        token_fp,
        effect,
        state_epoch,
        state_worker,
        previous,
        failure_code(body.error) if type(body) is Fail else None,
    )


def sender_attempt(state: ExecutionState, token_fp: str | None) -> tuple[int | None, str | None]:
    """The epoch and worker of the grant whose token has fingerprint ``token_fp``.

    The current holder, the attempt the last reclaim superseded, or an older grant
    (kept in the retry memory for the life of the state); ``(None, None)`` for a
    token no grant went to (a claim that got none, a forgery) or no token at all.
    """
    if token_fp is None:
        return None, None
    if token_fp == state.token_fp:
        return state.epoch, state.worker_id
    previous = state.previous
    if previous is not None and previous.token_fp == token_fp:
        return previous.epoch, previous.worker_id
    for seen in state.recent:  # a fenced request (rare): scan the grants
        if seen.outcome in _GRANTS and seen.token_fp == token_fp:
            return seen.epoch, seen.worker_id or None
    return None, None


def history_row(snap: ExecutionSnapshot, blob: bytes) -> Row:
    """A ``history`` row: one state version, what made it, and its state blob."""
    return _HISTORY(snap, blob)


def execution_row(snap: ExecutionSnapshot) -> Row:
    """An ``executions`` row: the current version, narrow."""
    return _EXECUTION(snap)
