"""Make requests of checked values, and turn decisions into results or typed errors.

Shared by the async and the sync client. The caller's arguments are checked once,
before anything is made, by the public call that takes them
(:class:`~oncelog.producer.calls.RequestBuilder`); what is here takes checked values.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypedDict

from oncelog.errors import (
    ApprovalDeniedError,
    ApprovalExpiredError,
    ApprovalRefusedError,
    ConflictError,
    ExecutionFailedError,
    InvalidRequestError,
    InvalidStateError,
    LedgerError,
    ResultExpiredError,
    ResultUnrecordableError,
    StaleClaimError,
)
from oncelog.identity import ids
from oncelog.identity.tokens import token_fingerprint
from oncelog.producer import entropy
from oncelog.producer.results import Claim, ClaimStatus, Execution, Heartbeat, built
from oncelog.schemas import models as m
from oncelog.schemas.models import Decision, Outcome

DEFAULT_RETENTION_S: Final = 7 * 24 * 3600


def new_claim_token() -> str:
    """A fresh 128-bit random claim token (hex): a capability, sent only on the requests topic."""
    return entropy.claim_token()


@dataclass(frozen=True, slots=True)
class Route:
    """Where an operation's records go: its channel and key name, both checked ids."""

    channel_id: str
    key_name: str


def make_request(
    route: Route,
    token: str | None,
    body: m.Body,
    request_id: str | None = None,
    reconciled: str | None = None,
) -> m.Request:
    """The request of ``body`` for ``route``'s operation, with a fresh request id unless the
    caller names one (checked, as ``reconciled`` is: see ``RequestBuilder``)."""
    op = ids.operation_id_unchecked(route.channel_id, route.key_name)
    rid = entropy.request_id() if request_id is None else request_id
    return m.Request(rid, op, route.channel_id, route.key_name, token, body, None, reconciled)


class ClaimOptions(TypedDict):
    """What a claim asks for, as the caller gave it: ``claim_execution``'s keyword options,
    checked by :meth:`~oncelog.producer.calls.RequestBuilder.claim_execution`."""

    tool_name: str
    params: Mapping[str, Any]
    dedup_fields: Sequence[str] | None
    lease_seconds: float
    retention_seconds: float
    effect: str


class ClaimCall(ClaimOptions, total=False):
    """A claim's options with its approval policy, when the tool's rule asks for one."""

    approval: m.ApprovalPolicy | None


def build_claim(
    route: Route, body: m.Claim, token: str | None = None, request_id: str | None = None
) -> m.Request:
    """A claim request with a fresh token, unless the caller names one (checked)."""
    return make_request(route, new_claim_token() if token is None else token, body, request_id)


def build_get(route: Route) -> m.Request:
    """A read of the operation's state through the log."""
    return make_request(route, None, m.Get())


# --- decisions -> results ----------------------------------------------------------


def _state_name(decision: Decision) -> str:
    return "absent" if decision.state is None else decision.state.status.value.lower()


def raise_for(decision: Decision) -> None:
    """Raise the typed error an outcome stands for; return for the others."""
    outcome, op = decision.outcome, decision.operation_id
    if outcome is Outcome.CONFLICT:
        raise ConflictError(
            f"operation {op}: the payload differs from the recorded one",
            stored_hash=decision.stored_hash or "",
            request_hash=decision.request_hash or "",
        )
    if outcome is Outcome.RESULT_EXPIRED:
        raise ResultExpiredError(f"operation {op}: the result was purged after retention")
    if outcome is Outcome.STALE_CLAIM:
        raise StaleClaimError(f"operation {op}: this claim token is fenced (not the holder)")
    if outcome is Outcome.FAILED and decision.kind is m.Kind.CLAIM:
        if ResultUnrecordableError.is_recorded(decision.error):
            raise ResultUnrecordableError(
                f"operation {op} failed for good: its tool ran once and its result could not "
                f"be recorded, so it is never run again under this key: {decision.error}"
            )
        raise ExecutionFailedError(f"operation {op} failed for good: {decision.error}")
    if outcome is Outcome.INVALID_REQUEST:
        raise InvalidRequestError(f"operation {op}: {decision.error}")
    _raise_for_approval(decision)


def _raise_for_approval(decision: Decision) -> None:
    outcome, op = decision.outcome, decision.operation_id
    approval = None if decision.state is None else decision.state.approval
    by = "" if approval is None or approval.decided_by is None else f" by {approval.decided_by}"
    if outcome is Outcome.DENIED and decision.kind is m.Kind.CLAIM:
        raise ApprovalDeniedError(f"operation {op} was denied{by}: {decision.error}")
    if outcome is Outcome.APPROVAL_EXPIRED:
        raise ApprovalExpiredError(f"operation {op}: nobody decided its approval in time")
    if outcome is Outcome.APPROVAL_REFUSED:
        why = decision.error or "the requesting worker cannot approve it"
        raise ApprovalRefusedError(f"operation {op}: {why}")


def claim_result(decision: Decision, token: str) -> Claim:
    """The :class:`Claim` for a claim decision, or the typed error it stands for."""
    raise_for(decision)
    state = decision.state
    if state is None:
        raise LedgerError(f"claim of {decision.operation_id} decided without a state")
    execution = Execution.of(state, decision)
    outcome = decision.outcome
    if outcome in (Outcome.CLAIMED, Outcome.RECLAIMED):
        # "claimed" only for a state this token holds now: never for a superseded grant.
        holds = state.status is m.Status.CLAIMED and state.epoch == decision.epoch
        if not holds or state.token_fp != token_fingerprint(token):
            raise StaleClaimError(
                f"operation {decision.operation_id}: the grant to this retried claim was superseded"
            )
        status = ClaimStatus.CLAIMED if outcome is Outcome.CLAIMED else ClaimStatus.RECLAIMED
        # Claim(status, execution, token, previous=..., decision=decision), field by field
        previous = decision.previous or state.previous
        return built(Claim, (status, execution, token, None, None, None, previous, decision))
    if outcome is Outcome.REPLAYED:
        result = None if decision.result is None else json.loads(decision.result)
        return Claim(ClaimStatus.REPLAYED, execution, token, result=result, decision=decision)
    if outcome is Outcome.AWAITING_APPROVAL:
        return Claim(ClaimStatus.AWAITING_APPROVAL, execution, token, decision=decision)
    if outcome is Outcome.IN_PROGRESS:
        return Claim(
            ClaimStatus.IN_PROGRESS,
            execution,
            token,
            holder=decision.holder_worker_id,
            lease_deadline_ms=decision.lease_deadline_ms,
            decision=decision,
        )
    raise InvalidStateError(
        f"claim of {decision.operation_id} answered {outcome.value}", state=_state_name(decision)
    )


def _expect(decision: Decision, expected: Outcome) -> m.ExecutionState:
    raise_for(decision)
    if decision.outcome is not expected or decision.state is None:
        raise InvalidStateError(
            f"{decision.kind.value} of {decision.operation_id} answered {decision.outcome.value}",
            state=_state_name(decision),
        )
    return decision.state


def state_result(decision: Decision, expected: Outcome) -> Execution:
    """The execution after a complete/fail/release, or the typed error."""
    return Execution.of(_expect(decision, expected), decision)


def get_result(decision: Decision) -> Execution | None:
    """The execution as of the read's position in the log; None while it is absent."""
    raise_for(decision)
    return None if decision.state is None else Execution.of(decision.state, decision)


def heartbeat_result(decision: Decision) -> Heartbeat:
    """The new deadline and the cancel flag, or the typed error."""
    state = _expect(decision, Outcome.HEARTBEAT_OK)
    return Heartbeat(state.lease_deadline_ms, state.cancel_requested, state.cancel_reason)
