"""Fold rows the mutation audit found unguarded (issue 41): re-inherits, upgraded grants. Pure."""

from __future__ import annotations

from oncelog.identity.tokens import token_fingerprint
from oncelog.referee.fold import fold
from oncelog.schemas.models import ExecutionState, Outcome, Status
from tests.projector.fold_factories import LEASE_MS, Op, given


def test_an_inherit_of_the_same_completion_from_a_second_source_names_the_state() -> None:
    op = Op()
    first = given([(op.inherit({"charge_id": "ch_1"}, from_channel="run-41"), 1_000)])
    again = op.inherit({"charge_id": "ch_1"}, from_channel="run-40", from_offset=3, adopted=True)
    after, decision = fold(first, again, 2_000)
    assert after is first  # the first inheritance stays
    # Not "inherited": that answer means "this very inheritance", and it came from elsewhere.
    assert (decision.outcome, decision.changed) == (Outcome.STATE_COMPLETED, False)
    assert first.inherited is not None
    assert first.inherited.from_channel == "run-41"


def _reclaimed_twice(op: Op) -> ExecutionState:
    """A claimed by w1, reclaimed by B (w2), then by C (w3): A's grant is only in the memory."""
    return given(
        [
            (op.claim("A", worker="w1"), 1_000),
            (op.claim("B", worker="w2"), 1_000 + LEASE_MS + 1),
            (op.claim("C", worker="w3"), 1_000 + 2 * (LEASE_MS + 1)),
        ]
    )


def test_a_fenced_completion_counts_as_granted_by_an_entry_without_a_fingerprint() -> None:
    op = Op()
    state = _reclaimed_twice(op)
    assert state.previous is not None
    assert state.previous.token_fp == token_fingerprint("B")
    # A snapshot written before fingerprints were kept decodes with empty ones: such an
    # entry might be any token's grant, so a fenced completion is a suspected double.
    upgraded = state._replace(recent=tuple(r._replace(token_fp="") for r in state.recent))
    _, decision = fold(upgraded, op.complete("A"), 1_000 + 2 * (LEASE_MS + 1) + 5)
    assert decision.outcome == Outcome.STALE_CLAIM
    assert decision.duplicate_effect_suspected is True
    # The same completion by a token no entry can stand for is fenced and not flagged.
    known = state._replace(recent=tuple(r for r in state.recent if r.token_fp))
    _, forged = fold(known, op.complete("never-granted"), 1_000 + 2 * (LEASE_MS + 1) + 6)
    assert (forged.outcome, forged.duplicate_effect_suspected) == (Outcome.STALE_CLAIM, False)
    assert upgraded.status is Status.CLAIMED
