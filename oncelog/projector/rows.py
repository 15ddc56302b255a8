"""The row tuples of the projection's tables, column for column (:mod:`.tables`).

One definition for both writers: the live store builds rows out of its batch's audit
entries and snapshots, the bulk rebuild out of the values it folds, and the two must be
equal (``tests/integration/test_bulk_rebuild.py`` compares every table); a state version
reaches both as the :class:`ExecutionSnapshot` the executions topic carries. Enum members
go to Arrow as they are: a StrEnum is a str holding its value.
"""

from __future__ import annotations

from typing import Any

from oncelog.identity.tokens import token_fingerprint
from oncelog.schemas.models import Claim, Decision, ExecutionSnapshot, Request


def audit_row(
    partition: int, offset: int, log_time_ms: int, request: Request, decision: Decision
) -> tuple[Any, ...]:
    """A ``requests`` row: one folded request and its answer."""
    body, state = request.body, decision.state
    # The claim names its worker and effect; other kinds report the state's holder.
    if type(body) is Claim:
        worker, effect = body.worker_id, body.effect
    elif state is not None:
        worker, effect = state.worker_id, state.effect
    else:
        worker, effect = None, None
    token_fp = token_fingerprint(request.claim_token) or None  # the token stays on the log
    version = 0 if state is None else state.version
    return (
        partition, offset, request.request_id, request.operation_id, request.channel_id,
        request.key_name, request.kind, decision.outcome, decision.changed, version,
        decision.epoch, worker, token_fp, effect, log_time_ms,
        decision.duplicate_effect_suspected, decision.retried,
    )  # fmt: skip


def history_row(snap: ExecutionSnapshot, blob: bytes) -> tuple[Any, ...]:
    """A ``history`` row: one state version, what made it, and its state blob."""
    s = snap.state
    return (
        s.operation_id, s.version, snap.source_partition, s.channel_id, s.key_name,
        snap.source_offset, snap.log_time_ms, snap.outcome, snap.source_request_id, s.status,
        s.epoch, s.worker_id, s.token_fp, s.effect, s.result, s.result_hash, s.expires_at_ms,
        blob, s.lease_deadline_ms, s.tool_name,
    )  # fmt: skip


def execution_row(snap: ExecutionSnapshot) -> tuple[Any, ...]:
    """An ``executions`` row: the current version, narrow."""
    s = snap.state
    return (
        s.operation_id, snap.source_partition, s.channel_id, s.key_name, s.status, s.version,
        s.epoch, s.worker_id, s.effect, s.result, s.result_hash, s.expires_at_ms,
        snap.source_offset, snap.log_time_ms,
    )  # fmt: skip
