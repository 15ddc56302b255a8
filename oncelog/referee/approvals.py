"""Approvals: an intent recorded before the effect, decided by a person (docs/spec.md §4).

Private to :mod:`oncelog.referee`: the rules :mod:`.fold` applies to a claim whose
policy requires approval, to a claim that meets an intent and to an approve or deny.
"""

from __future__ import annotations

from typing import Final

from oncelog.referee.verdicts import (
    Result,
    answer_with_state,
    commit,
    decide,
    grant_changes,
    unchanged,
)
from oncelog.schemas.models import (
    Approval,
    Approve,
    Claim,
    Deny,
    ExecutionState,
    Outcome,
    RecentRequest,
    Request,
    Status,
)

_UNSIGNED: Final = "not signed by an approver the intent lists"
_SELF: Final = "the requesting worker may not approve its own intent"


def first_intent(request: Request, body: Claim, t: int) -> Result:
    """A claim whose policy requires approval: the intent is recorded, nothing is granted.

    Epoch 0 and no holder, as for an inheritance; the lease deadline shows the
    approval's deadline. The requesting worker is kept to refuse its own approval.
    """
    policy = request.approval
    assert policy is not None  # the caller checked
    deadline = t + policy.timeout_ms
    memo = RecentRequest(request.request_id, Outcome.AWAITING_APPROVAL, 0, "", "", t)
    changes = grant_changes(body, "", t)
    changes.update(status=Status.AWAITING_APPROVAL, lease_deadline_ms=deadline)
    state = ExecutionState(
        operation_id=request.operation_id,
        channel_id=request.channel_id,
        key_name=request.key_name,
        version=1,
        epoch=0,
        request_hash=body.request_hash,
        recent=(memo,),
        updated_at_ms=t,
        approval=Approval(
            t, deadline, body.worker_id, policy.self_approval, approvers=policy.approvers
        ),
        **changes,
    )
    return state, decide(state, request, Outcome.AWAITING_APPROVAL, t, True)


def claim_under_approval(
    state: ExecutionState, request: Request, body: Claim, fp: str, t: int
) -> Result:
    """A claim meets an intent: wait, expired, denied (with the reason), or the grant."""
    approval = state.approval
    status = state.status
    if status is Status.APPROVED:
        changes = grant_changes(body, fp, t)
        return commit(state, request, fp, Outcome.CLAIMED, t, epoch=state.epoch + 1, **changes)
    if status is Status.DENIED:
        reason = None if approval is None else approval.reason
        return state, decide(state, request, Outcome.DENIED, t, error=reason)
    if approval is not None and t >= approval.deadline_ms:
        return unchanged(state, request, Outcome.APPROVAL_EXPIRED, t)
    return unchanged(state, request, Outcome.AWAITING_APPROVAL, t)


def on_decide(
    state: ExecutionState, request: Request, body: Approve | Deny, fp: str, t: int, *, signed: bool
) -> Result:
    """An approver's approve or deny, bound to the intent's request hash.

    ``signed``: the referee's finding that the decision is signed by one of the approvers
    the intent lists (:mod:`oncelog.identity.approver_signature`); read only when it lists
    some. An intent without approvers is decided by name.
    """
    approval = state.approval
    if body.request_hash != state.request_hash:
        return state, decide(
            state, request, Outcome.CONFLICT, t,
            stored_hash=state.request_hash, request_hash=body.request_hash,
        )  # fmt: skip
    if state.status is not Status.AWAITING_APPROVAL or approval is None:
        return answer_with_state(state, request, t)
    if t >= approval.deadline_ms:
        return unchanged(state, request, Outcome.APPROVAL_EXPIRED, t)
    if approval.approvers and not signed:
        return state, decide(state, request, Outcome.APPROVAL_REFUSED, t, error=_UNSIGNED)
    if body.approver == approval.requested_by and not approval.self_approval:
        return state, decide(state, request, Outcome.APPROVAL_REFUSED, t, error=_SELF)
    approve = type(body) is Approve
    reason = body.reason if isinstance(body, Deny) else None
    decided = approval._replace(
        approved=approve, decided_by=body.approver, decided_at_ms=t, reason=reason
    )
    outcome = Outcome.APPROVED if approve else Outcome.DENIED
    status = Status.APPROVED if approve else Status.DENIED
    return commit(
        state, request, fp, outcome, t, detail={"error": reason}, status=status, approval=decided
    )
