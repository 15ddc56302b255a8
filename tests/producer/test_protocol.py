"""Pure SDK logic: decisions become results, timeouts stay inside the retry memory."""

from __future__ import annotations

import pytest

from oncelog.errors import InvalidArgumentError, StaleClaimError
from oncelog.identity.tokens import token_fingerprint
from oncelog.kafka.producer import DEFAULT_PRODUCER_CONFIG
from oncelog.producer.dispatch import MAX_CALL_TIMEOUT_S, Timeouts
from oncelog.producer.protocol import claim_result
from oncelog.referee.fold import RETRY_MEMORY_MS
from oncelog.schemas.models import Decision, ExecutionState, Kind, Outcome, Status, evolve
from tests.projector.fold_factories import Op, given


def _claimed_by(token: str) -> ExecutionState:
    return given([(Op().claim(token), 1_000)])


def _decision(state: ExecutionState, outcome: Outcome, epoch: int) -> Decision:
    return Decision(
        request_id="r", operation_id=state.operation_id, kind=Kind.CLAIM, outcome=outcome,
        changed=False, log_time_ms=2_000, state=state, epoch=epoch, retried=True,
    )  # fmt: skip


def test_claim_result_reports_claimed_for_the_token_that_holds_it() -> None:
    token = "secret-token-0123"
    state = _claimed_by(token)
    claim = claim_result(_decision(state, Outcome.CLAIMED, 1), token)
    assert claim.status == "claimed"
    assert claim.owned
    assert claim.claim_token == token
    assert token not in repr(claim)  # a capability stays out of reprs and logs


@pytest.mark.parametrize(
    "status", [Status.COMPLETED, Status.FAILED, Status.EXPIRED], ids=lambda s: s.value
)
def test_claim_result_never_reports_claimed_for_a_state_that_is_not_claimed(
    status: Status,
) -> None:
    state = evolve(_claimed_by("A"), status=status, result=b'"ok"', result_hash="h")
    with pytest.raises(StaleClaimError):
        claim_result(_decision(state, Outcome.CLAIMED, 1), "A")


def test_claim_result_refuses_a_grant_of_another_epoch_or_token() -> None:
    state = _claimed_by("A")
    with pytest.raises(StaleClaimError):
        claim_result(_decision(evolve(state, epoch=2), Outcome.CLAIMED, 1), "A")
    with pytest.raises(StaleClaimError):
        claim_result(_decision(state, Outcome.CLAIMED, 1), "B")
    assert state.token_fp == token_fingerprint("A")


@pytest.mark.parametrize(
    ("total", "resend"), [(0, 1), (-1, 1), (MAX_CALL_TIMEOUT_S + 1, 5), (5, 0)]
)
def test_timeouts_outside_the_retry_memory_are_refused(total: float, resend: float) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        Timeouts(total, resend)
    assert caught.value.code == "invalid_argument"


def test_the_retry_memory_covers_a_call_timeout_plus_a_delivery_timeout() -> None:
    delivery_ms = int(DEFAULT_PRODUCER_CONFIG["message.timeout.ms"])
    assert MAX_CALL_TIMEOUT_S * 1000 + delivery_ms <= RETRY_MEMORY_MS
