"""Signed decisions (docs/spec.md §4, "Approvals"): an intent that lists approvers takes only
an approve or deny signed by one of them, checked by the one referee step (``judge``) that
the projector, the rebuild and ``InMemoryLedger`` share. Pure: no broker, no file."""

from __future__ import annotations

import base64
from dataclasses import replace

import pytest

from oncelog.errors import InvalidArgumentError, InvalidRequestError
from oncelog.identity import approver_signature as sig
from oncelog.referee.fold import PartitionClock, fold
from oncelog.referee.judge import admit, judge
from oncelog.referee.validate import check_request
from oncelog.schemas.codec import encode_request
from oncelog.schemas.models import (
    Approve,
    ApproverKey,
    Deny,
    ExecutionState,
    Outcome,
    Request,
    Status,
)
from tests.projector.fold_factories import Op

ANN = base64.b64decode(sig.new_private_key())
BOB = base64.b64decode(sig.new_private_key())
MALLORY = base64.b64decode(sig.new_private_key())
APPROVERS = (ApproverKey("ann", sig.public_key_of(ANN)), ApproverKey("bob", sig.public_key_of(BOB)))


@pytest.fixture
def op() -> Op:
    return Op()


def _judged(state: ExecutionState | None, request: Request, t: int) -> tuple[
    ExecutionState | None, Outcome, str | None
]:  # fmt: skip
    out = judge(state, request, PartitionClock(), ts_ms=t, partition=0, offset=t)
    return out.state, out.decision.outcome, out.decision.error


def _intent(op: Op) -> ExecutionState:
    ask = op.ask("A", worker="w1")
    ask = ask._replace(approval=ask.approval._replace(approvers=APPROVERS))  # type: ignore[union-attr]
    state, outcome, _ = _judged(None, ask, 1_000)
    assert outcome is Outcome.AWAITING_APPROVAL
    assert state is not None
    assert state.approval is not None
    assert state.approval.approvers == APPROVERS
    return state


def _signed(op: Op, request: Request, key: bytes, operation_id: str | None = None) -> Request:
    body = request.body
    assert isinstance(body, Approve | Deny)
    reason = body.reason if isinstance(body, Deny) else ""
    message = sig.decision_message(
        operation_id or op.operation_id,
        body.request_hash,
        isinstance(body, Approve),
        body.approver,
        reason,
    )
    return request._replace(body=replace(body, signature=sig.sign(key, message)))


def test_a_decision_signed_by_a_listed_approver_decides(op: Op) -> None:
    state, outcome, _ = _judged(_intent(op), _signed(op, op.approve("ann"), ANN), 2_000)
    assert outcome is Outcome.APPROVED
    assert state is not None
    assert state.status is Status.APPROVED
    assert state.approval is not None
    assert state.approval.decided_by == "ann"
    denied, outcome, error = _judged(_intent(op), _signed(op, op.deny("no", "bob"), BOB), 2_000)
    assert (outcome, error) == (Outcome.DENIED, "no")
    assert denied is not None
    assert denied.status is Status.DENIED


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(lambda op: op.approve("ann"), id="unsigned"),
        pytest.param(lambda op: _signed(op, op.approve("ann"), MALLORY), id="another key"),
        pytest.param(lambda op: _signed(op, op.approve("ann"), BOB), id="a listed key, other name"),
        pytest.param(lambda op: _signed(op, op.approve("mallory"), MALLORY), id="unlisted name"),
        pytest.param(
            lambda op: op.approve("ann")._replace(
                body=replace(
                    op.approve("ann").body,
                    signature=_signed(op, op.deny("no", "ann"), ANN).body.signature,  # type: ignore[union-attr]
                )
            ),
            id="a deny's signature on an approve",
        ),
        pytest.param(
            lambda op: _signed(op, op.approve("ann"), ANN, Op(key_name="another").operation_id),
            id="signed for another operation",
        ),
    ],
)
def test_a_decision_not_signed_by_a_listed_approver_changes_nothing(op: Op, forge: object) -> None:
    before = _intent(op)
    after, outcome, error = _judged(before, forge(op), 2_000)  # type: ignore[operator]
    assert after is before
    assert outcome is Outcome.APPROVAL_REFUSED
    assert error is not None
    assert "signed" in error
    _claim, outcome, _ = _judged(after, op.claim("B", worker="w2"), 3_000)
    assert outcome is Outcome.AWAITING_APPROVAL  # still no grant


def test_a_signature_for_other_params_is_a_conflict_first(op: Op) -> None:
    other = _signed(op, op.approve("ann", params={"order_id": "4471", "amount_cents": 1}), ANN)
    _, outcome, _ = _judged(_intent(op), other, 2_000)
    assert outcome is Outcome.CONFLICT


def test_the_fold_alone_refuses_a_decision_on_a_keyed_intent_unless_told_signed(op: Op) -> None:
    before = _intent(op)
    signed = _signed(op, op.approve("ann"), ANN)
    assert fold(before, signed, 2_000)[1].outcome is Outcome.APPROVAL_REFUSED
    assert fold(before, signed, 2_000, signed=True)[1].outcome is Outcome.APPROVED


def test_an_intent_without_approvers_is_decided_by_name(op: Op) -> None:
    state, outcome, _ = _judged(None, op.ask("A", worker="w1"), 1_000)
    _, outcome, _ = _judged(state, op.approve("anyone"), 2_000)
    assert outcome is Outcome.APPROVED


def test_signed_decisions_survive_the_wire(op: Op) -> None:
    ask = op.ask("A", worker="w1")
    ask = ask._replace(approval=ask.approval._replace(approvers=APPROVERS))  # type: ignore[union-attr]
    approve = _signed(op, op.approve("ann"), ANN)
    partitions = 1
    for request in (ask, approve):
        data = encode_request(request)
        key = op.operation_id.encode()
        admitted = admit(data, key, partition=0, offset=0, ts_ms=1, partitions=partitions)
        assert admitted == request


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param((ApproverKey("ann", b"\x01" * 31),), id="short key"),
        pytest.param((APPROVERS[0], APPROVERS[0]), id="twice"),
        pytest.param((ApproverKey("", sig.public_key_of(ANN)),), id="empty name"),
    ],
)
def test_a_policy_with_malformed_approvers_is_invalid(op: Op, bad: tuple[ApproverKey, ...]) -> None:
    ask = op.ask("A")
    ask = ask._replace(approval=ask.approval._replace(approvers=bad))  # type: ignore[union-attr]
    with pytest.raises(InvalidRequestError):
        check_request(ask, None, 0, 1)


def test_a_signature_of_the_wrong_length_is_invalid(op: Op) -> None:
    approve = op.approve("ann")
    body = approve.body
    assert isinstance(body, Approve)
    approve = approve._replace(body=replace(body, signature=b"x" * 63))
    with pytest.raises(InvalidRequestError):
        check_request(approve, None, 0, 1)


def test_keys_are_base64_of_32_bytes() -> None:
    key = sig.new_private_key()
    assert len(sig.key_bytes(key, "ONCELOG_X")) == 32
    with pytest.raises(InvalidArgumentError, match="ONCELOG_X is not base64"):
        sig.key_bytes("not base64!", "ONCELOG_X")
    with pytest.raises(InvalidArgumentError, match="16 bytes"):
        sig.key_bytes(base64.b64encode(b"x" * 16).decode(), "ONCELOG_X")
