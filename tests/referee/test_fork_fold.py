"""The inherit rows of the state table (docs/spec.md §4, forks): one test per row."""

from __future__ import annotations

import pytest

from oncelog.identity.canonical_json import canonical_json
from oncelog.referee.fold import fold
from oncelog.schemas.models import ExecutionState, Inheritance, Outcome, Status
from tests.projector.fold_factories import RETENTION_MS, Op, given, run
from tests.referee.test_fold_table import assert_unchanged, claimed, completed, expired, failed


@pytest.fixture
def op() -> Op:
    return Op()


def test_inherit_on_absent_is_a_completion_with_its_provenance(op: Op) -> None:
    state, decision = fold(None, op.inherit({"charge_id": "ch_1"}, adopted=True), 5_000)
    assert state is not None
    assert (decision.outcome, decision.changed) == (Outcome.INHERITED, True)
    assert decision.result == canonical_json({"charge_id": "ch_1"})
    assert (state.status, state.version, state.epoch) == (Status.COMPLETED, 1, 0)
    assert (state.token_fp, state.worker_id) == ("", "")  # no grant happened on this channel
    assert state.inherited == Inheritance("run-41", 1, 7, True)
    assert state.expires_at_ms == 5_000 + RETENTION_MS


def test_a_claim_of_an_inherited_operation_replays_it(op: Op) -> None:
    state = given([(op.inherit({"charge_id": "ch_1"}), 1_000)])
    after, decision = fold(state, op.claim("A"), 2_000)
    assert after is state
    assert decision.outcome == Outcome.REPLAYED
    assert decision.result == canonical_json({"charge_id": "ch_1"})


def test_a_claim_with_other_params_conflicts_with_an_inherited_operation(op: Op) -> None:
    state = given([(op.inherit(), 1_000)])
    claim = op.claim("A", params={"order_id": "4471", "amount_cents": 1})
    assert assert_unchanged(state, claim, 2_000) == Outcome.CONFLICT


def test_the_same_inherit_sent_again_is_inherited_without_a_new_version(op: Op) -> None:
    state = given([(op.inherit(), 1_000)])
    assert assert_unchanged(state, op.inherit(), 2_000) == Outcome.INHERITED


def test_a_retried_inherit_is_a_retry(op: Op) -> None:
    state, decisions = run([(op.inherit(rid="r1"), 1_000), (op.inherit(rid="r1"), 2_000)])
    assert state is not None
    assert state.version == 1
    assert decisions[1].retried
    assert decisions[1].outcome == Outcome.INHERITED


@pytest.mark.parametrize("make", [completed, expired])
def test_inherit_of_the_same_completion_from_elsewhere_names_the_state(
    op: Op, make: object
) -> None:
    state: ExecutionState = make(op)  # type: ignore[operator]
    named = {Status.COMPLETED: Outcome.STATE_COMPLETED, Status.EXPIRED: Outcome.STATE_EXPIRED}
    assert assert_unchanged(state, op.inherit(), 10**9) == named[state.status]


def _other_params(op: Op) -> ExecutionState:
    return given([(op.inherit(params={"order_id": "1", "amount_cents": 1}), 1_000)])


def _other_result(op: Op) -> ExecutionState:
    return completed(op, result="other")


@pytest.mark.parametrize(
    "make",
    [
        claimed,
        lambda op: failed(op, True),
        lambda op: failed(op, False),
        _other_params,
        _other_result,
    ],
)
def test_inherit_never_overwrites_another_decided_state(op: Op, make: object) -> None:
    state: ExecutionState = make(op)  # type: ignore[operator]
    after, decision = fold(state, op.inherit(), 3_000)
    assert after is state
    assert (decision.outcome, decision.changed) == (Outcome.CONFLICT, False)
    # Another request or result: the hashes say which; a claim or failure: the state does.
    done = state.status is Status.COMPLETED
    assert (decision.stored_hash != decision.request_hash) is done
