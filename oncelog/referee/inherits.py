"""Forks: a completion taken from another channel, into an empty or a decided slot.

Private to :mod:`oncelog.referee`: the rules :mod:`.fold` applies to an inherit
(docs/spec.md §4).
"""

from __future__ import annotations

from typing import Any

from oncelog.referee.verdicts import (
    Result,
    answer_with_state,
    decide,
    payload_fingerprint,
    sha256_hex,
    unchanged,
)
from oncelog.schemas.models import (
    ExecutionState,
    Inherit,
    Inheritance,
    Outcome,
    RecentRequest,
    Request,
    Status,
)


def _inheritance(body: Inherit) -> Inheritance:
    return Inheritance(body.from_channel, body.from_partition, body.from_offset, body.adopted)


def first_inherit(request: Request, body: Inherit, t: int) -> Result:
    """An inherit into an empty slot: a completion whose provenance is another channel.

    No grant happened on this channel: epoch 0, no holder. The result lives as long
    as the parent's retention says, counted from now.
    """
    memo = RecentRequest(request.request_id, Outcome.INHERITED, 0, "", payload_fingerprint(body), t)
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
        result_hash=sha256_hex(body.result),
        completed_at_ms=t,
        expires_at_ms=t + body.retention_ms,
        recent=(memo,),
        updated_at_ms=t,
        inherited=_inheritance(body),
    )
    return state, decide(state, request, Outcome.INHERITED, t, True, result=body.result)


def on_inherit(state: ExecutionState, request: Request, body: Inherit, fp: str, t: int) -> Result:
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
        stored, asked = state.result_hash or "", sha256_hex(body.result)
    if not done or stored != asked:
        return state, decide(
            state, request, Outcome.CONFLICT, t, stored_hash=stored, request_hash=asked
        )
    if state.inherited == _inheritance(body):
        return unchanged(state, request, Outcome.INHERITED, t)
    return answer_with_state(state, request, t)
