"""Unknown outcomes and fenced completions (docs/spec.md §4, issue 26): the fold's new rows.

A reclaim of an ``external`` step whose attempt neither completed, failed nor
released marks that attempt's outcome unknown; a completion by an earlier grant's
token is a proven duplicate, one by a token never granted is not a duplicate.
"""

from __future__ import annotations

import dataclasses

import pytest

from oncelog.identity.tokens import token_fingerprint as fp
from oncelog.referee.fold import fold
from oncelog.schemas.models import Claim, Effect, ExecutionState, Outcome, Request, Status
from tests.projector.fold_factories import LEASE_MS, Op, given, run

S = 1_000


@pytest.fixture
def op() -> Op:
    return Op()


def _pure(request: Request) -> Request:
    assert isinstance(request.body, Claim)
    return request._replace(body=dataclasses.replace(request.body, effect=Effect.PURE))


def _reclaimed(state: ExecutionState, op: Op, t: int) -> tuple[ExecutionState, bool]:
    after, decision = fold(state, op.claim("B", worker="w2"), t)
    assert after is not None
    assert decision.outcome is Outcome.RECLAIMED
    assert decision.previous is not None
    assert decision.previous == after.previous  # the state keeps what the decision says
    return after, decision.previous.outcome_unknown


# --- the reclaim rows --------------------------------------------------------------


def test_a_reclaim_of_a_silent_external_attempt_marks_its_outcome_unknown(op: Op) -> None:
    state = given([(op.claim("A", worker="w1"), 1 * S), (op.heartbeat("A"), 4 * S)])
    after, decision = fold(state, op.claim("B", worker="w2"), 4 * S + LEASE_MS)
    previous = decision.previous
    assert previous is not None
    assert previous.outcome_unknown is True
    # The attempt that may have run: its epoch, worker, token fingerprint and last heartbeat.
    assert (previous.epoch, previous.worker_id, previous.token_fp) == (1, "w1", fp("A"))
    assert (previous.claimed_at_ms, previous.last_heartbeat_ms) == (1 * S, 4 * S)
    assert previous.status is Status.CLAIMED
    assert after is not None
    assert after.epoch == 2


def test_a_reclaim_of_a_pure_step_leaves_no_unknown_outcome(op: Op) -> None:
    state = given([(_pure(op.claim("A")), 1 * S)])
    _, unknown = _reclaimed(state, op, 1 * S + LEASE_MS)
    assert unknown is False


def test_a_reclaim_after_a_release_leaves_no_unknown_outcome(op: Op) -> None:
    state = given([(op.claim("A"), 1 * S), (op.release("A"), 2 * S)])
    assert state.released is True
    _, unknown = _reclaimed(state, op, 2 * S)
    assert unknown is False


def test_a_heartbeat_after_a_release_takes_the_release_back(op: Op) -> None:
    state = given([(op.claim("A"), 1 * S), (op.release("A"), 2 * S), (op.heartbeat("A"), 3 * S)])
    assert state.released is False
    _, unknown = _reclaimed(state, op, 3 * S + LEASE_MS)
    assert unknown is True


def test_a_reclaim_after_a_retryable_failure_knows_the_outcome(op: Op) -> None:
    state = given([(op.claim("A"), 1 * S), (op.fail("A", retryable=True), 2 * S)])
    after, unknown = _reclaimed(state, op, 3 * S)
    assert unknown is False
    assert after.previous is not None
    assert after.previous.status is Status.FAILED


def test_a_new_grant_starts_unreleased(op: Op) -> None:
    state = given([(op.claim("A"), 1 * S), (op.release("A"), 2 * S)])
    after, _ = _reclaimed(state, op, 2 * S)
    assert after.released is False
    # ... so the new attempt, silent in turn, leaves an unknown outcome at the next reclaim.
    _, again = fold(after, op.claim("C", worker="w3"), 2 * S + LEASE_MS)
    assert again.previous is not None
    assert again.previous.outcome_unknown is True
    assert (again.previous.epoch, again.previous.worker_id) == (2, "w2")


def test_a_retried_reclaim_marks_nothing_again(op: Op) -> None:
    reclaim = op.claim("B", worker="w2", rid="rc")
    state = given([(op.claim("A"), 1 * S), (reclaim, 1 * S + LEASE_MS)])
    after, decision = fold(state, reclaim, 2 * S + LEASE_MS)
    assert after is state
    assert (decision.retried, decision.changed, decision.previous) == (True, False, None)


def test_the_grants_in_the_memory_name_their_workers(op: Op) -> None:
    state = given([(op.claim("A", worker="w1"), 1 * S), (op.heartbeat("A"), 2 * S)])
    after, _ = _reclaimed(state, op, 2 * S + LEASE_MS)
    grants = [(r.epoch, r.worker_id) for r in after.recent if r.outcome in ("claimed", "reclaimed")]
    assert grants == [(1, "w1"), (2, "w2")]
    assert [r.worker_id for r in after.recent if r.outcome == "heartbeat_ok"] == [""]


# --- fenced completions: proven doubles and forgeries ------------------------------


def test_a_completion_by_the_superseded_attempt_is_a_proven_duplicate(op: Op) -> None:
    state = given([(op.claim("A"), 1 * S), (op.claim("B", worker="w2"), 1 * S + LEASE_MS)])
    after, decision = fold(state, op.complete("A", "late"), 2 * S + LEASE_MS)
    assert after is state
    assert (decision.outcome, decision.duplicate_effect_suspected) == (Outcome.STALE_CLAIM, True)


def test_a_completion_by_any_earlier_grant_is_a_proven_duplicate(op: Op) -> None:
    steps = [
        (op.claim("A", worker="w1"), 1 * S),
        (op.claim("B", worker="w2"), 1 * S + LEASE_MS),
        (op.claim("C", worker="w3"), 1 * S + 2 * LEASE_MS),
    ]
    state = given(steps)
    assert state.previous is not None
    assert state.previous.token_fp == fp("B")
    _, decision = fold(state, op.complete("A", "very late"), 1 * S + 3 * LEASE_MS)
    assert decision.duplicate_effect_suspected is True


@pytest.mark.parametrize("status", ["claimed", "completed", "failed"])
def test_a_completion_with_a_token_never_granted_is_fenced_and_not_a_duplicate(
    op: Op, status: str
) -> None:
    tail = {
        "claimed": [],
        "completed": [(op.complete("A"), 2 * S)],
        "failed": [(op.fail("A", retryable=True), 2 * S)],
    }[status]
    state = given([(op.claim("A"), 1 * S), *tail])
    after, decision = fold(state, op.complete("forged"), 3 * S)
    assert after is state
    assert decision.outcome is Outcome.STALE_CLAIM
    assert decision.duplicate_effect_suspected is False


def test_a_claim_that_got_no_grant_has_no_attempt_to_double(op: Op) -> None:
    """An in_progress claim's token was never granted: its completion is not a duplicate."""
    _, decisions = run(
        [
            (op.claim("A"), 1 * S),
            (op.claim("B", worker="w2"), 2 * S),  # in_progress: B gets nothing
            (op.complete("B"), 3 * S),
        ]
    )
    assert [d.outcome for d in decisions] == ["claimed", "in_progress", "stale_claim"]
    assert decisions[-1].duplicate_effect_suspected is False
