"""The referee: a pure fold of one request into the state of its operation.

``fold(state, request, log_time_ms)`` is a pure function of its arguments: no
clock, no randomness, no I/O, no logging. Refolding the same requests from the
same state therefore yields the same states and decisions byte for byte, and a
state restored from the last snapshot plus the tail equals the live state.
The table it implements is section 4 of the ledger spec.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any, Final, NamedTuple

from oncelog.identity.tokens import fingerprint_of_token, token_fingerprint
from oncelog.schemas.models import (
    BODY_KIND,
    Body,
    Cancel,
    Claim,
    Complete,
    Decision,
    Effect,
    ExecutionSnapshot,
    ExecutionState,
    Fail,
    Get,
    Heartbeat,
    Inherit,
    Inheritance,
    Outcome,
    PreviousAttempt,
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

_GRANTS: Final = frozenset({Outcome.CLAIMED, Outcome.RECLAIMED})

_OUTCOME_OF_STATUS: Final = {
    Status.CLAIMED: Outcome.STATE_CLAIMED,
    Status.COMPLETED: Outcome.STATE_COMPLETED,
    Status.FAILED: Outcome.STATE_FAILED,
    Status.EXPIRED: Outcome.STATE_EXPIRED,
}


# A new state version copies the old one as a list and patches the changed fields by
# index, cheaper than ``state._replace`` (docs/performance.md, "Choices and what they
# bought"). The index comes from the model's own field list.
_STATE_INDEX: Final = {name: i for i, name in enumerate(ExecutionState._fields)}


def _evolve(state: ExecutionState, changes: dict[str, Any]) -> ExecutionState:
    """``state`` with ``changes`` applied, as ``state._replace(**changes)`` would return."""
    values = list(state)
    for name, value in changes.items():
        values[_STATE_INDEX[name]] = value
    return ExecutionState._make(values)


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- decisions ---------------------------------------------------------------------


def _decide(
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
    # The leading fields in Decision's order, the rare ones by name.
    return Decision(
        request.request_id, request.operation_id, kind, outcome, changed, t, state, epoch, **detail
    )


def _unchanged(state: ExecutionState | None, request: Request, outcome: Outcome, t: int) -> Result:
    """No change: judged, answered, nothing new to publish on the changelog."""
    return state, _decide(state, request, outcome, t)


def _answer_with_state(state: ExecutionState, request: Request, t: int) -> Result:
    """The "any other pair" row: an outcome naming the state, no change."""
    return state, _decide(state, request, _OUTCOME_OF_STATUS[state.status], t)


def _stale(state: ExecutionState, request: Request, t: int, suspected: bool = False) -> Result:
    return state, _decide(
        state, request, Outcome.STALE_CLAIM, t, duplicate_effect_suspected=suspected
    )


def _was_granted(state: ExecutionState, fp: str) -> bool:
    """Whether an earlier grant of this operation went to the token of fingerprint ``fp``.

    The grants stay in the retry memory for the life of the state; an entry upgraded
    from before fingerprints were kept (empty) might be any token, so it counts.
    Run only for a fenced completion: a scan of the grants, off the hot path.
    """
    previous = state.previous
    if previous is not None and previous.token_fp == fp:
        return True
    return any(r.outcome in _GRANTS and r.token_fp in (fp, "") for r in state.recent)


def _payload_fp(body: Body) -> str:
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
        return _hash(body.result)[:PAYLOAD_FP_HEX]
    if type(body) is Release or type(body) is Sweep:
        return type(body).__name__
    return _hash(repr(body).encode())[:PAYLOAD_FP_HEX]


def _remember(
    recent: tuple[RecentRequest, ...], entry: RecentRequest, t: int
) -> tuple[RecentRequest, ...]:
    """Add ``entry``; forget other entries older than the retry window, never a grant."""
    horizon = t - RETRY_MEMORY_MS
    # Entries are in log-time order: while the oldest is inside the window, all are
    # (the common case: no scan, no rebuild).
    if not recent or recent[0].log_time_ms > horizon:
        return (*recent, entry)
    kept = tuple(r for r in recent if r.log_time_ms > horizon or r.outcome in _GRANTS)
    return (*kept, entry)


def _is_retry(seen: RecentRequest, fp: str, body: Body) -> bool:
    """Same id, same token, same payload: a retry (empty fingerprints are unrecorded)."""
    if seen.token_fp and seen.token_fp != fp:
        return False
    return not seen.payload_fp or seen.payload_fp == _payload_fp(body)


def _commit(
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
    payload = _payload_fp(request.body) if payload_fp is None else payload_fp
    memo = RecentRequest(
        request.request_id, outcome, epoch, fp, payload, t, changes.get("worker_id", "")
    )
    # ``changes`` is this call's own keyword dict: completing it in place is safe.
    changes["version"] = state.version + 1
    changes["updated_at_ms"] = t
    changes["recent"] = _remember(state.recent, memo, t)
    new = _evolve(state, changes)
    return new, _decide(new, request, outcome, t, True, **(detail or {}))


# --- per-kind rules ----------------------------------------------------------------


def _grant_changes(body: Claim, fp: str, t: int) -> dict[str, Any]:
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


def _first_claim(request: Request, body: Claim, t: int) -> Result:
    if request.claim_token is None:
        return _unchanged(None, request, Outcome.INVALID_REQUEST, t)
    fp = token_fingerprint(request.claim_token)
    memo = RecentRequest(
        request.request_id, Outcome.CLAIMED, 1, fp, _payload_fp(body), t, body.worker_id
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
        **_grant_changes(body, fp, t),
    )
    return state, _decide(state, request, Outcome.CLAIMED, t, True)


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
    changes = _grant_changes(body, fp, t)
    return _commit(
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
    return _commit(state, request, fp, Outcome.IN_PROGRESS, t)


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
        return _unchanged(state, request, Outcome.INVALID_REQUEST, t)
    if status is Status.CLAIMED:
        if fp == state.token_fp:
            return _unchanged(state, request, Outcome.CLAIMED, t)
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
        return _unchanged(state, request, Outcome.IN_PROGRESS, t)
    if status is Status.COMPLETED and state.expires_at_ms is not None and t < state.expires_at_ms:
        return state, _decide(state, request, Outcome.REPLAYED, t, result=state.result)
    if status is Status.COMPLETED or status is Status.EXPIRED:
        return _unchanged(state, request, Outcome.RESULT_EXPIRED, t)
    return state, _decide(state, request, Outcome.FAILED, t, error=state.error)


def _on_heartbeat(
    state: ExecutionState, request: Request, body: Heartbeat, fp: str, t: int
) -> Result:
    if fp != state.token_fp:
        return _stale(state, request, t)
    if state.status is not Status.CLAIMED:
        return _answer_with_state(state, request, t)
    lease = state.lease_ms if body.lease_ms is None else body.lease_ms
    if state.released:  # the holder works on after all (rare): its outcome is unknown again
        state = _evolve(state, {"released": False})
    return _commit(
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
        return _stale(state, request, t, suspected=_was_granted(state, fp))
    status = state.status
    if status is Status.CLAIMED:
        result_hash = _hash(body.result)
        return _commit(
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
        return _answer_with_state(state, request, t)
    return _duplicate_complete(state, request, body, t)


def _duplicate_complete(state: ExecutionState, request: Request, body: Complete, t: int) -> Result:
    """The holder completes again: the stored answer when the result is the same."""
    if state.status is Status.COMPLETED and body.result == state.result:
        return state, _decide(state, request, Outcome.COMPLETED, t, result=state.result)
    requested = _hash(body.result)
    if requested == state.result_hash:  # EXPIRED: same result, but its body is gone
        return _answer_with_state(state, request, t)
    return state, _decide(
        state,
        request,
        Outcome.CONFLICT,
        t,
        stored_hash=state.result_hash,
        request_hash=requested,
    )


def _on_fail(state: ExecutionState, request: Request, body: Fail, fp: str, t: int) -> Result:
    if fp != state.token_fp:
        return _stale(state, request, t)
    if state.status is not Status.CLAIMED:
        return _answer_with_state(state, request, t)
    return _commit(
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
        return _stale(state, request, t)
    if state.status is not Status.CLAIMED:
        return _answer_with_state(state, request, t)
    return _commit(state, request, fp, Outcome.RELEASED, t, lease_deadline_ms=t, released=True)


def _on_cancel(state: ExecutionState, request: Request, body: Cancel, fp: str, t: int) -> Result:
    if state.status is not Status.CLAIMED:
        return _answer_with_state(state, request, t)
    if state.cancel_requested:
        return _unchanged(state, request, Outcome.CANCEL_REQUESTED, t)
    return _commit(
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
        return _answer_with_state(state, request, t)
    return _commit(state, request, fp, Outcome.EXPIRED, t, status=Status.EXPIRED, result=None)


# --- forks: a completion taken from another channel ------------------------------------


def _inheritance(body: Inherit) -> Inheritance:
    return Inheritance(body.from_channel, body.from_partition, body.from_offset, body.adopted)


def _first_inherit(request: Request, body: Inherit, t: int) -> Result:
    """An inherit into an empty slot: a completion whose provenance is another channel.

    No grant happened on this channel: epoch 0, no holder. The result lives as long
    as the parent's retention says, counted from now.
    """
    memo = RecentRequest(request.request_id, Outcome.INHERITED, 0, "", _payload_fp(body), t)
    named: dict[str, Any] = {"operation_id": request.operation_id, "channel_id": request.channel_id}
    state = ExecutionState(
        **named,
        key_name=request.key_name,
        status=Status.COMPLETED,
        version=1,
        epoch=0,
        request_hash=body.request_hash,
        tool_name=body.tool_name,
        params=body.params,
        effect=body.effect,
        lease_ms=0,
        retention_ms=body.retention_ms,
        token_fp="",
        worker_id="",
        claimed_at_ms=t,
        lease_deadline_ms=t,
        result=body.result,
        result_hash=_hash(body.result),
        completed_at_ms=t,
        expires_at_ms=t + body.retention_ms,
        recent=(memo,),
        updated_at_ms=t,
        inherited=_inheritance(body),
    )
    return state, _decide(state, request, Outcome.INHERITED, t, True, result=body.result)


def _on_inherit(state: ExecutionState, request: Request, body: Inherit, fp: str, t: int) -> Result:
    """An inherit into a decided slot: the same completion is a no-op, anything else a conflict.

    A fork sent again (it was interrupted, or is simply repeated) meets its own
    inheritance and answers ``inherited`` without a new version. A slot completed
    with the same request and result, by this channel or from another branch, keeps
    what it has. A slot that holds anything else (a claim, a failure, another
    request or result) is never overwritten: ``conflict``, loudly.
    """
    done = state.status is Status.COMPLETED or state.status is Status.EXPIRED
    if not done or state.request_hash != body.request_hash:
        stored, asked = state.request_hash, body.request_hash
    else:
        stored, asked = state.result_hash or "", _hash(body.result)
    if not done or stored != asked:
        return state, _decide(
            state, request, Outcome.CONFLICT, t, stored_hash=stored, request_hash=asked
        )
    if state.inherited == _inheritance(body):
        return _unchanged(state, request, Outcome.INHERITED, t)
    return _answer_with_state(state, request, t)


def _on_get(state: ExecutionState, request: Request, body: Get, fp: str, t: int) -> Result:
    """A read through the log: the outcome names the state, which the decision carries."""
    return _answer_with_state(state, request, t)


_RULES: Final[dict[type, Callable[[ExecutionState, Request, Any, str, int], Result]]] = {
    Heartbeat: _on_heartbeat,
    Complete: _on_complete,
    Fail: _on_fail,
    Release: _on_release,
    Cancel: _on_cancel,
    Sweep: _on_sweep,
    Get: _on_get,
    Inherit: _on_inherit,
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
    if outcome in _GRANTS:
        if state.status is Status.CLAIMED and state.epoch == seen.epoch:
            return state, _decide(state, request, outcome, t, retried=True)
        after, decision = _answer_without_grant(state, request, t)
        return after, decision._replace(retried=True)
    if outcome is Outcome.COMPLETED and type(body) is Complete:
        after, decision = _duplicate_complete(state, request, body, t)
        return after, decision._replace(retried=True)
    return state, _decide(state, request, outcome, t, retried=True, epoch=seen.epoch)


# --- the fold ----------------------------------------------------------------------


def fold(
    state: ExecutionState | None, request: Request, log_time_ms: int, max_clock_step_ms: int = 0
) -> Result:
    """Judge ``request`` against ``state`` at log time ``log_time_ms``.

    ``max_clock_step_ms`` is the ledger's bound on a step of the leader's clock: a
    lapsed lease is reclaimed only once it lapsed by that much more (see
    :func:`clock_grace_ms`).

    Returns the state after (the same object when nothing changed; ``None``
    while the operation is absent) and exactly one decision. The decision's
    ``changed`` is True only when a new state version was made. Tokens are
    compared by fingerprint: the state never holds a token (docs/spec.md §8).
    """
    body: Body = request.body
    if state is None:
        if type(body) is Claim:
            return _first_claim(request, body, log_time_ms)
        if type(body) is Inherit:
            return _first_inherit(request, body, log_time_ms)
        return _unchanged(None, request, Outcome.STATE_ABSENT, log_time_ms)
    # The conflict rule comes first: a different request_hash never takes effect.
    if type(body) is Claim and body.request_hash != state.request_hash:
        return state, _decide(
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
        if seen.request_id == request_id and _is_retry(seen, fp, body):
            return _retried(state, request, body, seen, log_time_ms)
    if type(body) is Claim:
        return _on_claim(state, request, body, fp, log_time_ms, max_step=max_clock_step_ms)
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
