"""The approval rows of the state table (docs/spec.md §4), one test each."""

from __future__ import annotations

import pytest

from oncelog.identity.tokens import token_fingerprint as fp
from oncelog.referee.fold import fold
from oncelog.schemas.models import ExecutionState, Outcome, Status
from tests.projector.fold_factories import Op, given, run

AMOUNT = {"order_id": "4471", "amount_cents": 9900}


@pytest.fixture
def op() -> Op:
    return Op()


def pending(op: Op) -> ExecutionState:
    return given([(op.ask("A", worker="w1"), 1_000)])


def test_a_claim_requiring_approval_records_an_intent_and_grants_nothing(op: Op) -> None:
    state, decision = fold(None, op.ask("A", worker="w1", timeout_ms=5_000), 1_000)
    assert state is not None
    assert (decision.outcome, decision.changed) == (Outcome.AWAITING_APPROVAL, True)
    assert (state.status, state.epoch, state.version, state.token_fp) == (
        Status.AWAITING_APPROVAL, 0, 1, "",
    )  # fmt: skip
    assert state.approval is not None
    assert (state.approval.deadline_ms, state.approval.requested_by) == (6_000, "w1")
    assert decision.holder_worker_id is None


def test_a_claim_on_a_pending_intent_waits_without_a_change(op: Op) -> None:
    before = pending(op)
    after, decision = fold(before, op.claim("B", worker="w2"), 2_000)
    assert after is before
    assert (decision.outcome, decision.changed) == (Outcome.AWAITING_APPROVAL, False)


def test_approve_then_the_next_claim_by_any_worker_is_claimed_epoch_1(op: Op) -> None:
    approved, decision = fold(pending(op), op.approve("ann"), 2_000)
    assert (decision.outcome, decision.changed) == (Outcome.APPROVED, True)
    assert approved is not None
    assert approved.status is Status.APPROVED
    assert approved.approval is not None
    assert (approved.approval.decided_by, approved.approval.approved) == ("ann", True)
    granted, decision = fold(approved, op.claim("B", worker="w2"), 3_000)
    assert decision.outcome == Outcome.CLAIMED
    assert granted is not None
    assert (granted.status, granted.epoch, granted.token_fp) == (Status.CLAIMED, 1, fp("B"))
    assert granted.approval == approved.approval  # who approved stays with the effect


def test_the_waiting_claim_resent_after_the_approval_is_granted(op: Op) -> None:
    ask = op.ask("A", worker="w1")
    state, decisions = run([(ask, 1_000), (op.approve(), 2_000), (ask, 3_000)])
    assert [d.outcome for d in decisions] == [
        Outcome.AWAITING_APPROVAL, Outcome.APPROVED, Outcome.CLAIMED,
    ]  # fmt: skip
    assert state is not None
    assert state.token_fp == fp("A")


def test_deny_is_terminal_and_every_later_claim_learns_the_reason(op: Op) -> None:
    denied, decision = fold(pending(op), op.deny("over the limit"), 2_000)
    assert (decision.outcome, decision.error) == (Outcome.DENIED, "over the limit")
    assert denied is not None
    assert denied.status is Status.DENIED
    for token, t in (("A", 3_000), ("C", 10**9)):
        after, answer = fold(denied, op.claim(token), t)
        assert after is denied
        assert (answer.outcome, answer.error, answer.changed) == (
            Outcome.DENIED, "over the limit", False,
        )  # fmt: skip


def test_undecided_by_the_deadline_is_approval_expired(op: Op) -> None:
    before = given([(op.ask("A", timeout_ms=5_000), 1_000)])
    for request in (op.claim("B"), op.approve(), op.deny()):
        after, decision = fold(before, request, 6_000)
        assert after is before
        assert decision.outcome == Outcome.APPROVAL_EXPIRED
    _, decision = fold(before, op.claim("B"), 5_999)
    assert decision.outcome == Outcome.AWAITING_APPROVAL


def test_an_approval_of_other_params_is_a_conflict(op: Op) -> None:
    before = pending(op)
    after, decision = fold(before, op.approve(params=AMOUNT), 2_000)
    assert after is before
    assert decision.outcome == Outcome.CONFLICT


def test_a_claim_with_other_params_after_approval_is_a_conflict(op: Op) -> None:
    approved = given([(op.ask("A"), 1_000), (op.approve(), 2_000)])
    after, decision = fold(approved, op.claim("A", params=AMOUNT), 3_000)
    assert after is approved
    assert decision.outcome == Outcome.CONFLICT


def test_the_requesting_worker_cannot_approve_its_own_intent(op: Op) -> None:
    before = pending(op)
    after, decision = fold(before, op.approve("w1"), 2_000)
    assert after is before
    assert decision.outcome == Outcome.APPROVAL_REFUSED


def test_the_policy_may_let_the_requesting_worker_approve(op: Op) -> None:
    before = given([(op.ask("A", worker="w1", self_approval=True), 1_000)])
    _, decision = fold(before, op.approve("w1"), 2_000)
    assert decision.outcome == Outcome.APPROVED


def test_a_decided_intent_is_decided_once(op: Op) -> None:
    approved = given([(op.ask("A"), 1_000), (op.approve("ann"), 2_000)])
    for request in (op.approve("bob"), op.deny()):
        after, decision = fold(approved, request, 3_000)
        assert after is approved
        assert decision.outcome == Outcome.APPROVED


def test_a_retried_approve_is_answered_as_its_first_copy(op: Op) -> None:
    approve = op.approve("ann")
    _, decisions = run([(op.ask("A"), 1_000), (approve, 2_000), (approve, 2_500)])
    assert decisions[-1].retried is True
    assert decisions[-1].outcome == Outcome.APPROVED
    assert decisions[-1].changed is False


def test_a_holders_request_on_an_intent_is_fenced(op: Op) -> None:
    before = pending(op)
    for request in (op.complete("A"), op.heartbeat("A"), op.release("A")):
        after, decision = fold(before, request, 2_000)
        assert after is before
        assert decision.outcome == Outcome.STALE_CLAIM
        assert decision.duplicate_effect_suspected is False


def test_approve_or_deny_on_absent_or_on_a_claim_without_approval_names_the_state(
    op: Op,
) -> None:
    _, decision = fold(None, op.approve(), 1_000)
    assert decision.outcome == Outcome.STATE_ABSENT
    claimed = given([(op.claim("A"), 1_000)])
    after, decision = fold(claimed, op.deny(), 2_000)
    assert after is claimed
    assert decision.outcome == Outcome.STATE_CLAIMED
