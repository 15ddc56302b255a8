"""The referee: a pure fold of one request into the state of its operation.

``fold(state, request, log_time_ms)`` is a pure function of its arguments: no
clock, no randomness, no I/O, no logging. Refolding the same requests from the
same state therefore yields the same states and decisions byte for byte, and a
state restored from the last snapshot plus the tail equals the live state.
The table it implements is section 4 of the ledger spec. The rules shared by
every kind (decisions, new versions, the retry memory) are in :mod:`.verdicts`,
those of approvals in :mod:`.approvals` and of inherits in :mod:`.inherits`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, NamedTuple

from oncelog.identity.tokens import fingerprint_of_token, token_fingerprint
from oncelog.referee.approvals import claim_under_approval, first_intent, on_decide
from oncelog.referee.inherits import first_inherit, on_inherit
from oncelog.referee.verdicts import (
    GRANTS,
    PAYLOAD_FP_HEX,
    RETRY_MEMORY_MS,
    Result,
    answer_with_state,
    commit,
    decide,
    evolve,
    grant_changes,
    payload_fingerprint,
    sha256_hex,
    stale,
    unchanged,
)
from oncelog.schemas.models import (
    Approve,
    Body,
    Cancel,
    Claim,
    Complete,
    Decision,
    Deny,
    Effect,
    ExecutionSnapshot,
    ExecutionState,
    Fail,
    Get,
    Heartbeat,
    Inherit,
    Outcome,
    PreviousAttempt,
    RecentRequest,
    Release,
    Request,
    Status,
    Sweep,
)

__all__ = ["RETRY_MEMORY_MS", "PartitionClock", "Result", "clock_grace_ms", "fold", "snapshot_of"]

_UNDECIDED: Final = frozenset({Status.AWAITING_APPROVAL, Status.APPROVED, Status.DENIED})


def _was_granted(state: ExecutionState, fp: str) -> bool:
    """Whether an earlier grant of this operation went to the token of fingerprint ``fp``.

    The grants stay in the retry memory for the life of the state; an entry upgraded
    from before fingerprints were kept (empty) might be any token, so it counts.
    Run only for a fenced completion: a scan of the grants, off the hot path.
    """
    previous = state.previous
    if previous is not None and previous.token_fp == fp:
        return True
    return any(r.outcome in GRANTS and r.token_fp in (fp, "") for r in state.recent)


def _is_retry(seen: RecentRequest, fp: str, body: Body) -> bool:
    """Same id, same token, same payload: a retry (empty fingerprints are unrecorded)."""
    if seen.token_fp and seen.token_fp != fp:
        return False
    return not seen.payload_fp or seen.payload_fp == payload_fingerprint(body)


# --- per-kind rules ----------------------------------------------------------------


def _first_claim(request: Request, body: Claim, t: int) -> Result:
    if request.claim_token is None:
        return unchanged(None, request, Outcome.INVALID_REQUEST, t)
    fp = token_fingerprint(request.claim_token)
    memo = RecentRequest(
        request.request_id, Outcome.CLAIMED, 1, fp, payload_fingerprint(body), t, body.worker_id
    )
    state = ExecutionState(
        operation_id=request.operation_id,
        channel_id=request.channel_id,
        key_name=request.key_name,
        version=1,
        epoch=1,
        request_hash=body.request_hash,
        recent=(memo,),
        updated_at_ms=t,
        **grant_changes(body, fp, t),
    )
    return state, decide(state, request, Outcome.CLAIMED, t, True)


def _reclaim(state: ExecutionState, request: Request, body: Claim, fp: str, t: int) -> Result:
    # Still CLAIMED: the attempt neither completed nor failed. Unless it released, or its
    # step is pure, its effect may have happened and nobody heard: an unknown outcome.
    unknown = (
        state.status is Status.CLAIMED and state.effect is Effect.EXTERNAL and not state.released
    )
    previous = PreviousAttempt(
        state.epoch,
        state.token_fp,
        state.worker_id,
        state.claimed_at_ms,
        state.last_heartbeat_ms,
        state.status,
        state.error,
        unknown,
    )
    changes = grant_changes(body, fp, t)
    return commit(
        state,
        request,
        fp,
        Outcome.RECLAIMED,
        t,
        detail={"previous": previous},
        epoch=state.epoch + 1,
        previous=previous,
        **changes,
    )


def _wait(state: ExecutionState, request: Request, fp: str, t: int) -> Result:
    """``in_progress``, remembered: a re-sent copy of this claim is answered the same.

    The holder may release, fail or lapse before a copy of this request is appended
    (its client re-sends while the projector is down or behind). Judged again, that
    copy would be granted while its client reads this answer and never learns it
    holds the lease (docs/spec.md §4). So the id joins the retry memory, which is
    part of the state: a new version, with the status, holder and lease unchanged.
    """
    return commit(state, request, fp, Outcome.IN_PROGRESS, t)


def clock_grace_ms(state: ExecutionState, max_clock_step_ms: int) -> int:
    """How long past its deadline a lapsed lease still waits for its holder.

    Log time is the leader broker's clock: a step forward of it (NTP, a VM resumed, a
    new leader whose clock runs ahead) lapses a lease its holder keeps heartbeating.
    So a lapsed lease waits ``max_clock_step_ms`` more before a reclaim, unless it was
    released (the holder gave it up: no clock decided that). docs/spec.md §4, "Clock
    steps"; the bound is a ledger constant (``ONCELOG_MAX_CLOCK_STEP_MS``).
    """
    return 0 if state.released else max_clock_step_ms


def _on_claim(
    state: ExecutionState, request: Request, body: Claim, fp: str, t: int, *, max_step: int = 0
) -> Result:
    status = state.status
    if request.claim_token is None:
        return unchanged(state, request, Outcome.INVALID_REQUEST, t)
    if status in _UNDECIDED:
        return claim_under_approval(state, request, body, fp, t)
    if status is Status.CLAIMED:
        if fp == state.token_fp:
            return unchanged(state, request, Outcome.CLAIMED, t)
        if t < state.lease_deadline_ms + clock_grace_ms(state, max_step):
            return _wait(state, request, fp, t)
        return _reclaim(state, request, body, fp, t)
    if status is Status.FAILED and state.retryable:
        return _reclaim(state, request, body, fp, t)
    return _answer_without_grant(state, request, t)


def _answer_without_grant(state: ExecutionState, request: Request, t: int) -> Result:
    """What a claim learns when it gets no grant: the state's answer, no change."""
    status = state.status
    if status is Status.CLAIMED:
        return unchanged(state, request, Outcome.IN_PROGRESS, t)
    if status is Status.COMPLETED and state.expires_at_ms is not None and t < state.expires_at_ms:
        return state, decide(state, request, Outcome.REPLAYED, t, result=state.result)
    if status is Status.COMPLETED or status is Status.EXPIRED:
        return unchanged(state, request, Outcome.RESULT_EXPIRED, t)
    return state, decide(state, request, Outcome.FAILED, t, error=state.error)


def _on_heartbeat(
    state: ExecutionState, request: Request, body: Heartbeat, fp: str, t: int
) -> Result:
    if fp != state.token_fp:
        return stale(state, request, t)
    if state.status is not Status.CLAIMED:
        return answer_with_state(state, request, t)
    lease = state.lease_ms if body.lease_ms is None else body.lease_ms
    if state.released:  # the holder works on after all (rare): its outcome is unknown again
        state = evolve(state, {"released": False})
    return commit(
        state,
        request,
        fp,
        Outcome.HEARTBEAT_OK,
        t,
        lease_deadline_ms=t + lease,
        last_heartbeat_ms=t,
    )


def _on_complete(
    state: ExecutionState, request: Request, body: Complete, fp: str, t: int
) -> Result:
    if fp != state.token_fp:
        # A fenced attempt's side effect already happened: flag it for the audit. A token
        # no grant ever went to (a forgery, a bug) proves no effect: fenced, not flagged.
        return stale(state, request, t, suspected=_was_granted(state, fp))
    status = state.status
    if status is Status.CLAIMED:
        result_hash = sha256_hex(body.result)
        return commit(
            state,
            request,
            fp,
            Outcome.COMPLETED,
            t,
            detail={"result": body.result},
            payload_fp=result_hash[:PAYLOAD_FP_HEX],
            status=Status.COMPLETED,
            result=body.result,
            result_hash=result_hash,
            completed_at_ms=t,
            expires_at_ms=t + state.retention_ms,
        )
    if status is Status.FAILED:
        return answer_with_state(state, request, t)
    return _duplicate_complete(state, request, body, t)


def _duplicate_complete(state: ExecutionState, request: Request, body: Complete, t: int) -> Result:
    """The holder completes again: the stored answer when the result is the same."""
    if state.status is Status.COMPLETED and body.result == state.result:
        return state, decide(state, request, Outcome.COMPLETED, t, result=state.result)
    requested = sha256_hex(body.result)
    if requested == state.result_hash:  # EXPIRED: same result, but its body is gone
        return answer_with_state(state, request, t)
    return state, decide(
        state,
        request,
        Outcome.CONFLICT,
        t,
        stored_hash=state.result_hash,
        request_hash=requested,
    )


def _on_fail(state: ExecutionState, request: Request, body: Fail, fp: str, t: int) -> Result:
    if fp != state.token_fp:
        return stale(state, request, t)
    if state.status is not Status.CLAIMED:
        return answer_with_state(state, request, t)
    return commit(
        state,
        request,
        fp,
        Outcome.FAILED,
        t,
        detail={"error": body.error},
        status=Status.FAILED,
        error=body.error,
        retryable=body.retryable,
    )


def _on_release(state: ExecutionState, request: Request, body: Release, fp: str, t: int) -> Result:
    if fp != state.token_fp:
        return stale(state, request, t)
    if state.status is not Status.CLAIMED:
        return answer_with_state(state, request, t)
    return commit(state, request, fp, Outcome.RELEASED, t, lease_deadline_ms=t, released=True)


def _on_cancel(state: ExecutionState, request: Request, body: Cancel, fp: str, t: int) -> Result:
    if state.status is not Status.CLAIMED:
        return answer_with_state(state, request, t)
    if state.cancel_requested:
        return unchanged(state, request, Outcome.CANCEL_REQUESTED, t)
    return commit(
        state,
        request,
        fp,
        Outcome.CANCEL_REQUESTED,
        t,
        cancel_requested=True,
        cancel_reason=body.reason,
    )


def _on_sweep(state: ExecutionState, request: Request, body: Sweep, fp: str, t: int) -> Result:
    expires = state.expires_at_ms
    if state.status is not Status.COMPLETED or expires is None or expires > t:
        return answer_with_state(state, request, t)
    return commit(state, request, fp, Outcome.EXPIRED, t, status=Status.EXPIRED, result=None)


def _on_get(state: ExecutionState, request: Request, body: Get, fp: str, t: int) -> Result:
    """A read through the log: the outcome names the state, which the decision carries."""
    return answer_with_state(state, request, t)


_RULES: Final[dict[type, Callable[[ExecutionState, Request, Any, str, int], Result]]] = {
    Heartbeat: _on_heartbeat,
    Complete: _on_complete,
    Fail: _on_fail,
    Release: _on_release,
    Cancel: _on_cancel,
    Sweep: _on_sweep,
    Get: _on_get,
    Inherit: on_inherit,
}


def _retried(
    state: ExecutionState, request: Request, body: Body, seen: RecentRequest, t: int
) -> Result:
    """A retry of a request that already changed the state: it takes no effect again.

    A retried grant gets its grant back only while it still holds (same epoch,
    CLAIMED); otherwise the state's answer without a new grant. A retried
    completion is a duplicate complete. Any other retry gets its first answer: a
    claim first answered ``in_progress`` is answered so again, and granted nothing.
    """
    outcome = seen.outcome
    if outcome in GRANTS:
        if state.status is Status.CLAIMED and state.epoch == seen.epoch:
            return state, decide(state, request, outcome, t, retried=True)
        after, decision = _answer_without_grant(state, request, t)
        return after, decision._replace(retried=True)
    if outcome is Outcome.COMPLETED and type(body) is Complete:
        after, decision = _duplicate_complete(state, request, body, t)
        return after, decision._replace(retried=True)
    return state, decide(state, request, outcome, t, retried=True, epoch=seen.epoch)


# --- the fold ----------------------------------------------------------------------


def fold(
    state: ExecutionState | None,
    request: Request,
    log_time_ms: int,
    max_clock_step_ms: int = 0,
    signed: bool = False,
) -> Result:
    """Judge ``request`` against ``state`` at log time ``log_time_ms``.

    ``max_clock_step_ms`` is the ledger's bound on a step of the leader's clock: a
    lapsed lease is reclaimed only once it lapsed by that much more (see
    :func:`clock_grace_ms`). ``signed``: for an approve or deny, that it is signed by an
    approver the intent lists (the judge checks it outside the fold, which does no
    cryptography); an intent that lists approvers refuses a decision without it.

    Returns the state after (the same object when nothing changed; ``None``
    while the operation is absent) and exactly one decision. The decision's
    ``changed`` is True only when a new state version was made. Tokens are
    compared by fingerprint: the state never holds a token (docs/spec.md §8).
    """
    body: Body = request.body
    if state is None:
        if type(body) is Claim:
            if request.approval is not None:
                return first_intent(request, body, log_time_ms)
            return _first_claim(request, body, log_time_ms)
        if type(body) is Inherit:
            return first_inherit(request, body, log_time_ms)
        return unchanged(None, request, Outcome.STATE_ABSENT, log_time_ms)
    # The conflict rule comes first: a different request_hash never takes effect.
    if type(body) is Claim and body.request_hash != state.request_hash:
        return state, decide(
            state,
            request,
            Outcome.CONFLICT,
            log_time_ms,
            stored_hash=state.request_hash,
            request_hash=body.request_hash,
        )
    token = request.claim_token
    fp = "" if token is None else fingerprint_of_token(token)
    request_id = request.request_id
    # Every earlier request with this id counts (docs/spec.md §4): an id reused with another
    # payload took effect as new, and a re-send of that later request is its retry.
    for seen in state.recent:
        # A claim answered ``awaiting_approval`` is judged again: the client that sent it
        # waits for the decision by re-sending it (same id and token).
        if (
            seen.request_id == request_id
            and seen.outcome is not Outcome.AWAITING_APPROVAL
            and _is_retry(seen, fp, body)
        ):
            return _retried(state, request, body, seen, log_time_ms)
    if type(body) is Claim:
        return _on_claim(state, request, body, fp, log_time_ms, max_step=max_clock_step_ms)
    if type(body) is Approve or type(body) is Deny:
        return on_decide(state, request, body, fp, log_time_ms, signed=signed)
    return _RULES[type(body)](state, request, body, fp, log_time_ms)


# --- log time and batches ----------------------------------------------------------


class PartitionClock(NamedTuple):
    """The clamp that keeps log time non-decreasing on one partition.

    The caller owns it: persist it with the projector's position, pass it back.
    A NamedTuple like the models: a new clock per advancing record is cheap.
    """

    last_ms: int | None = None

    def advance(self, broker_ts_ms: int) -> tuple[PartitionClock, int]:
        """Clamp ``broker_ts_ms`` to at least the last log time; return the new clock."""
        last = self.last_ms
        clamped = broker_ts_ms if last is None or broker_ts_ms > last else last
        if clamped == last:
            return self, clamped
        return PartitionClock(clamped), clamped


def snapshot_of(decision: Decision, partition: int, offset: int) -> ExecutionSnapshot:
    """The executions-topic record for a decision that made a new state version."""
    if not decision.changed or decision.state is None:
        raise ValueError("only a decision that changed the state has a snapshot")
    return ExecutionSnapshot(
        state=decision.state,
        source_partition=partition,
        source_offset=offset,
        source_request_id=decision.request_id,
        outcome=decision.outcome,
        log_time_ms=decision.log_time_ms,
    )
