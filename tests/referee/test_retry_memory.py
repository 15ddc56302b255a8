"""The retry memory (docs/spec.md §4): no request id takes effect twice, however long the gap.

Each acceptance point of the trust-boundary issue has its own test here; the
stateful test (``test_fold_stateful.py``) adds the random long-run property.
"""

from __future__ import annotations

import dataclasses
import hashlib

import hypothesis.strategies as st
import pytest
from hypothesis import given as given_
from hypothesis import settings

from oncelog.identity.canonical_json import canonical_json
from oncelog.identity.tokens import token_fingerprint as fp
from oncelog.referee.fold import RETRY_MEMORY_MS, fold
from oncelog.schemas.models import Claim, Outcome, Request, Status
from tests.budget import examples
from tests.projector.fold_factories import LEASE_MS, RETENTION_MS, Op, given, run

S = 1_000  # ms per second


@pytest.fixture
def op() -> Op:
    return Op()


def test_differential_repro_resent_grant_after_32_heartbeats_is_not_granted_again(op: Op) -> None:
    """claim r0 by w1 (lease 5 s) at 0; r1 by w2 at 10 s; 32 heartbeats; r0 again at 100 s."""
    r0 = op.claim("t1", worker="w1", lease_ms=5 * S, rid="r0")
    steps = [(r0, 0), (op.claim("t2", worker="w2", lease_ms=5 * S, rid="r1"), 10 * S)]
    steps += [(op.heartbeat("t2"), 10 * S + i * 100) for i in range(1, 33)]
    state, decisions = run(steps)
    assert state is not None
    assert decisions[1].outcome is Outcome.RECLAIMED
    after, again = fold(state, r0, 100 * S)
    assert after is state  # no new grant, no new version
    assert again.changed is False
    assert again.retried is True
    assert again.outcome is Outcome.IN_PROGRESS  # the current answer: w2 holds it (epoch 2)
    assert (state.epoch, state.worker_id, state.token_fp) == (2, "w2", fp("t2"))


def test_the_grant_id_is_kept_for_the_life_of_the_state(op: Op) -> None:
    r0 = op.claim("A", rid="r0")
    steps = [(r0, 0)] + [(op.heartbeat("A"), i * 60 * S) for i in range(1, 200)]
    state = given(steps)
    assert "r0" in {r.request_id for r in state.recent}
    after, again = fold(state, r0, 200 * 60 * S)
    assert (after, again.outcome, again.retried, again.epoch) == (state, "claimed", True, 1)


def test_other_ids_are_kept_for_the_retry_window_then_forgotten(op: Op) -> None:
    beat = op.heartbeat("A", rid="h1")
    state = given([(op.claim("A"), 0), (beat, 1 * S), (op.heartbeat("A"), RETRY_MEMORY_MS)])
    _, inside = fold(state, beat, RETRY_MEMORY_MS)
    assert inside.retried is True  # still remembered at the window's edge
    later = given([(op.claim("A"), 0), (beat, 1 * S), (op.heartbeat("A"), RETRY_MEMORY_MS + S)])
    assert "h1" not in {r.request_id for r in later.recent}


@pytest.mark.parametrize(
    ("ending", "expected"),
    [
        ("complete", Outcome.REPLAYED),
        ("expire", Outcome.RESULT_EXPIRED),
        ("fail_for_good", Outcome.FAILED),
        ("fail_retryable", Outcome.FAILED),
        ("reclaimed", Outcome.IN_PROGRESS),
    ],
)
def test_a_retried_grant_that_no_longer_holds_gets_the_current_answer(
    op: Op, ending: str, expected: Outcome
) -> None:
    grant = op.claim("A", rid="g")
    tail = {
        "complete": [(op.complete("A"), 2 * S)],
        "expire": [(op.complete("A"), 2 * S), (op.sweep(), 2 * S + RETENTION_MS)],
        "fail_for_good": [(op.fail("A", retryable=False), 2 * S)],
        "fail_retryable": [(op.fail("A", retryable=True), 2 * S)],
        "reclaimed": [(op.claim("B", worker="w2"), 1 * S + LEASE_MS)],
    }[ending]
    state = given([(grant, 1 * S), *tail])
    # Long after the new holder's lease lapsed: still no grant for the old request.
    at = state.updated_at_ms + (10 * LEASE_MS if ending == "reclaimed" else S)
    after, again = fold(state, grant, at)
    assert after is state, "a retried grant never grants again"
    assert (again.outcome, again.retried, again.changed) == (expected, True, False)
    if ending == "complete":
        assert again.result == canonical_json("ok")


@pytest.mark.parametrize(
    ("lease_ms", "retention_ms"),
    [(3 * LEASE_MS, RETENTION_MS), (LEASE_MS, 2 * RETENTION_MS), (S, S)],
    ids=["other-lease", "other-retention", "both"],
)
@pytest.mark.parametrize("ending", ["held", "complete"])
def test_a_claim_resent_with_another_lease_or_retention_is_a_retry(
    op: Op, lease_ms: int, retention_ms: int, ending: str
) -> None:
    """Spec §4: same id, token and request hash is a retry whatever its lease or retention."""
    grant = op.claim("A", rid="g")
    tail = [(op.complete("A"), 2 * S)] if ending == "complete" else []
    state = given([(grant, S), *tail])
    body = grant.body
    assert isinstance(body, Claim)
    resent = grant._replace(
        body=dataclasses.replace(body, lease_ms=lease_ms, retention_ms=retention_ms)
    )
    after, again = fold(state, resent, 3 * S)
    assert after is state, "the first claim's lease and retention stand"
    assert (again.retried, again.changed) == (True, False)
    expected = Outcome.REPLAYED if ending == "complete" else Outcome.CLAIMED
    assert again.outcome is expected
    assert (state.lease_ms, state.retention_ms) == (LEASE_MS, RETENTION_MS)


def test_a_request_id_reused_with_another_token_is_judged_as_new(op: Op) -> None:
    state = given([(op.claim("A"), 0), (op.complete("A", "ok", rid="c1"), S)])
    after, decision = fold(state, op.complete("forged", "ok", rid="c1"), 2 * S)
    assert after is state
    assert decision.outcome is Outcome.STALE_CLAIM
    assert decision.duplicate_effect_suspected is False  # never granted: not a duplicate
    assert decision.retried is False


def test_a_request_id_reused_with_another_payload_is_judged_as_new(op: Op) -> None:
    state = given([(op.claim("A"), 0), (op.complete("A", "ok", rid="c1"), S)])
    after, decision = fold(state, op.complete("A", "other", rid="c1"), 2 * S)
    assert after is state
    assert decision.outcome is Outcome.CONFLICT
    assert decision.stored_hash == hashlib.sha256(canonical_json("ok")).hexdigest()


def test_a_holders_completion_on_expired_with_another_result_is_a_conflict(op: Op) -> None:
    state = given([(op.claim("A"), 0), (op.complete("A", "ok"), S), (op.sweep(), S + RETENTION_MS)])
    assert state.status is Status.EXPIRED
    _, same = fold(state, op.complete("A", "ok"), 2 * RETENTION_MS)
    _, other = fold(state, op.complete("A", "different"), 2 * RETENTION_MS)
    assert same.outcome is Outcome.STATE_EXPIRED
    assert other.outcome is Outcome.CONFLICT


def test_a_retried_completion_on_an_expired_state_names_the_state(op: Op) -> None:
    done = op.complete("A", "ok", rid="c1")
    state = given([(op.claim("A"), 0), (done, S), (op.sweep(), S + RETENTION_MS)])
    _, again = fold(state, done, S + RETENTION_MS + S)
    assert (again.outcome, again.retried, again.result) == (Outcome.STATE_EXPIRED, True, None)


# --- ids reused with another payload (issue 26) -------------------------------------


def test_differential_repro_a_resent_reuse_of_an_id_takes_no_effect_again() -> None:
    """claim b r5 w3 lease=1 @0; heartbeat b r1 lease=1 @0; heartbeat b r1 lease=2 @0;
    heartbeat b r1 lease=2 @1: the last is a retry of the third (docs/spec.md §4), deadline 2."""
    op = Op()
    steps = [
        (op.claim("b", worker="w3", lease_ms=1, rid="r5"), 0),
        (op.heartbeat("b", lease_ms=1, rid="r1"), 0),
        (op.heartbeat("b", lease_ms=2, rid="r1"), 0),  # reused id, other payload: new
    ]
    state, decisions = run(steps)
    assert state is not None
    assert [d.changed for d in decisions] == [True, True, True]
    assert state.lease_deadline_ms == 2
    for t in (1, 1, 2):  # each re-send of the third request
        after, again = fold(state, op.heartbeat("b", lease_ms=2, rid="r1"), t)
        assert after is state, "a retry of the later request took effect again"
        assert (again.retried, again.changed, again.lease_deadline_ms) == (True, False, 2)
    # ... and a re-send of the second one is its retry, too.
    after, again = fold(state, op.heartbeat("b", lease_ms=1, rid="r1"), 1)
    assert (after is state, again.retried) == (True, True)


IDS = st.sampled_from(["r0", "r1", "r2"])
TOKENS = st.sampled_from(["A", "B"])
_OP = Op()
_REQUESTS = st.one_of(
    st.builds(
        lambda t, w, lease, rid: _OP.claim(t, worker=w, lease_ms=lease, rid=rid),
        TOKENS,
        st.sampled_from(["w1", "w2"]),
        st.sampled_from([1, 2, LEASE_MS]),
        IDS,
    ),
    st.builds(
        lambda t, lease, rid: _OP.heartbeat(t, lease_ms=lease, rid=rid),
        TOKENS,
        st.sampled_from([None, 1, 2, LEASE_MS]),
        IDS,
    ),
    st.builds(lambda t, r, rid: _OP.complete(t, r, rid=rid), TOKENS, st.sampled_from("xy"), IDS),
    st.builds(lambda t, ok, rid: _OP.fail(t, ok, rid=rid), TOKENS, st.booleans(), IDS),
    st.builds(lambda t, rid: _OP.release(t, rid=rid), TOKENS, IDS),
    st.builds(lambda rid: _OP.cancel(rid=rid), IDS),
    st.builds(lambda rid: _OP.sweep(rid=rid), IDS),
)
# Gaps stay far inside the retry window: every changing request is still remembered.
_LOGS = st.lists(
    st.tuples(_REQUESTS, st.sampled_from([0, 1, 3, LEASE_MS])), min_size=1, max_size=12
)


@settings(max_examples=examples(300), deadline=None)
@given_(log=_LOGS, pick=st.integers(0, 10**6), later=st.sampled_from([0, 1, LEASE_MS]))
def test_resending_any_request_that_took_effect_takes_no_effect_again(
    log: list[tuple[Request, int]], pick: int, later: int
) -> None:
    """Ids drawn from a pool of three, so they get reused with other payloads and tokens:
    a re-send of any earlier request that changed the state makes no new version, and
    every further re-send gets the same decision."""
    state = None
    changed: list[tuple[Request, int]] = []
    t = 0
    for request, gap in log:
        t += gap
        state, decision = fold(state, request, t)
        if decision.changed:
            changed.append((request, t))
    if state is None or not changed:
        return
    request, _ = changed[pick % len(changed)]
    after, first = fold(state, request, t + later)
    assert after is state, f"{request.request_id} took effect again"
    assert first.retried is True
    assert first.changed is False
    _, second = fold(after, request, t + later)
    assert second == first
