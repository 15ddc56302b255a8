"""The one referee step for a raw request record, shared by every place that folds.

A record is judged in two halves, because the live projector loads the states of a
whole poll batch at once, between them:

- :func:`admit` decodes the record and checks it (:func:`check_request`); a record
  that fails becomes a :class:`Refusal`: a dead letter, plus an ``invalid_request``
  answer when it decoded (its sender waits for one). A refused record does not move
  the partition's log-time clock.
- :func:`judge` advances the partition's clock to the record's broker timestamp,
  folds the admitted request against its operation's state and stamps the decision
  with the record's position. An approve or deny is checked here against the signing
  keys its intent recorded (:mod:`oncelog.identity.approver_signature`), and the fold
  told the finding: the fold itself does no cryptography.

The live projector (:mod:`oncelog.projector.batch`), the bulk rebuild
(:mod:`oncelog.projector.bulk_rebuild`) and :class:`oncelog.testing.InMemoryLedger`
call these two functions; they differ only in where records come from and where the
results go (publish and commit, Arrow chunks, memory). Pure: no clock, no I/O. Compiled
by mypyc (``oncelog._compiled``) with the request checks, as they run once per record.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from oncelog.errors import CodecError, InvalidRequestError, LedgerError
from oncelog.identity.approver_signature import decision_message, signed_by
from oncelog.referee.fold import PartitionClock, fold
from oncelog.referee.validate import check_request
from oncelog.schemas.codec import decode_request
from oncelog.schemas.models import Approve, Decision, Deny, ExecutionState, Outcome, Request

# The record's position closes a decision (``Decision``'s last two fields): a stamped
# copy is the fold's tuple up to there plus the position, without a lookup by name, made
# as ``Decision._make`` makes it (``tuple.__new__``) without its interpreted frame.
_POSITION: Final = Decision._fields.index("source_partition")
assert Decision._fields[_POSITION:] == ("source_partition", "source_offset")


class Refusal(NamedTuple):
    """A record the fold never sees: why, and the answer owed when it decoded."""

    error: LedgerError
    length: int  # bytes of the record's value, for the dead letter
    request: Request | None  # None when the record did not decode
    answer: Decision | None  # ``invalid_request`` for a decoded request, else None


class Judged(NamedTuple):
    """What one admitted request decided."""

    clock: PartitionClock  # the partition's clock after this record
    state: ExecutionState | None  # the state after (the same object when unchanged)
    decision: Decision  # stamped with the record's partition and offset


def admit(
    value: bytes, key: bytes | None, *, partition: int, offset: int, ts_ms: int, partitions: int
) -> Request | Refusal:
    """Decode and check one record of ``partition`` (of ``partitions``) at ``offset``."""
    request: Request | None = None
    try:
        request = decode_request(value)
        check_request(request, key, partition, partitions)
    except (CodecError, InvalidRequestError) as exc:
        answer = None if request is None else _invalid(request, partition, offset, ts_ms, exc)
        return Refusal(exc, len(value), request, answer)
    return request


def judge(
    state: ExecutionState | None,
    request: Request,
    clock: PartitionClock,
    *,
    ts_ms: int,
    partition: int,
    offset: int,
    max_clock_step_ms: int = 0,
) -> Judged:
    """Fold an admitted ``request`` at its record's broker timestamp ``ts_ms``, with the
    ledger's bound on a clock step (``Settings.max_clock_step_ms``)."""
    clock, log_time_ms = clock.advance(ts_ms)
    signed = signed_decision(state, request)
    after, decision = fold(state, request, log_time_ms, max_clock_step_ms, signed)
    stamped: Decision = tuple.__new__(Decision, (*decision[:_POSITION], partition, offset))
    return Judged(clock, after, stamped)


def signed_decision(state: ExecutionState | None, request: Request) -> bool:
    """Whether ``request`` is an approve or deny signed by an approver that ``state``'s
    intent lists (the fold reads it only then). Deterministic: the keys are on the log."""
    body = request.body
    approval = None if state is None else state.approval
    if approval is None or not approval.approvers or not isinstance(body, Approve | Deny):
        return False
    reason = body.reason if isinstance(body, Deny) else ""
    message = decision_message(
        request.operation_id, body.request_hash, isinstance(body, Approve), body.approver, reason
    )
    return signed_by(approval.approvers, body.approver, message, body.signature)


def _invalid(
    request: Request, partition: int, offset: int, ts_ms: int, exc: LedgerError
) -> Decision:
    """The answer to a request that decoded but failed its checks (log time unclamped)."""
    return Decision(
        request_id=request.request_id,
        operation_id=request.operation_id,
        kind=request.kind,
        outcome=Outcome.INVALID_REQUEST,
        changed=False,
        log_time_ms=ts_ms,
        error=exc.message,
        source_partition=partition,
        source_offset=offset,
    )
