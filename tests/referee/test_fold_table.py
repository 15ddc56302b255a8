"""One test per row of the state table (ledger spec, section 4), plus the seed cases."""

from __future__ import annotations

import hashlib

import pytest

from oncelog.identity.canonical_json import canonical_json
from oncelog.identity.tokens import token_fingerprint as fp
from oncelog.referee.fold import RETRY_MEMORY_MS, PartitionClock, fold
from oncelog.referee.judge import judge
from oncelog.schemas.models import ExecutionState, Outcome, Request, Status
from tests.projector.fold_factories import LEASE_MS, RETENTION_MS, Op, given, run


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def op() -> Op:
    return Op()


def claimed(op: Op) -> ExecutionState:
    return given([(op.claim("A"), 1_000)])


def completed(op: Op, result: object = "ok") -> ExecutionState:
    return given([(op.claim("A"), 1_000), (op.complete("A", result), 2_000)])


def failed(op: Op, retryable: bool) -> ExecutionState:
    return given([(op.claim("A"), 1_000), (op.fail("A", retryable), 2_000)])


def expired(op: Op) -> ExecutionState:
    return given(
        [(op.claim("A"), 1_000), (op.complete("A"), 2_000), (op.sweep(), 2_000 + RETENTION_MS)]
    )


def assert_unchanged(before: ExecutionState | None, request: Request, t: int) -> Outcome:
    after, decision = fold(before, request, t)
    assert after is before
    assert decision.changed is False
    assert decision.version == (0 if before is None else before.version)
    return decision.outcome


# --- claim -------------------------------------------------------------------------


def test_claim_on_absent_is_claimed_epoch_1_deadline_t_plus_lease(op: Op) -> None:
    state, decision = fold(None, op.claim("A", worker="w1"), 5_000)
    assert state is not None
    assert decision.outcome == "claimed"
    assert decision.changed is True
    assert (state.status, state.epoch, state.version) == (Status.CLAIMED, 1, 1)
    assert state.lease_deadline_ms == 5_000 + LEASE_MS
    assert (state.token_fp, state.worker_id) == (fp("A"), "w1")
    assert decision.holder_worker_id == "w1"


@pytest.mark.parametrize("make", [claimed, completed, expired, lambda op: failed(op, True)])
def test_claim_on_any_state_with_different_request_hash_is_conflict(op: Op, make: object) -> None:
    state = make(op)  # type: ignore[operator]
    request = op.claim("B", params={"order_id": "9999", "amount_cents": 4200})
    assert state is not None
    stored = state.request_hash
    after, decision = fold(state, request, 3_000)
    assert after is state
    assert decision.outcome == "conflict"
    assert decision.changed is False
    assert decision.stored_hash == stored
    assert decision.request_hash == request.body.request_hash  # type: ignore[union-attr]
    assert decision.stored_hash != decision.request_hash


def test_claim_on_claimed_with_same_token_is_claimed_without_change(op: Op) -> None:
    state = claimed(op)
    assert assert_unchanged(state, op.claim("A"), 2_000) == "claimed"


def test_claim_on_claimed_by_other_token_before_deadline_is_in_progress(op: Op) -> None:
    state = claimed(op)
    _, decision = fold(state, op.claim("B", worker="w2"), 1_000 + LEASE_MS - 1)
    assert decision.outcome == "in_progress"
    # Remembered (a new version that only adds the id to the retry memory): a copy of this
    # claim appended after the holder lets go is answered the same (docs/spec.md §4).
    assert decision.changed is True
    assert decision.holder_worker_id == "w1"
    assert decision.lease_deadline_ms == 1_000 + LEASE_MS


def test_claim_on_claimed_by_other_token_at_deadline_is_reclaimed_epoch_plus_1(op: Op) -> None:
    state = given([(op.claim("A"), 1_000), (op.heartbeat("A"), 4_000)])
    t = 4_000 + LEASE_MS  # t >= deadline: the boundary itself is lapsed
    after, decision = fold(state, op.claim("B", worker="w2"), t)
    assert after is not None
    assert decision.outcome == "reclaimed"
    assert decision.changed is True
    assert (after.epoch, after.token_fp, after.worker_id) == (2, fp("B"), "w2")
    assert after.lease_deadline_ms == t + LEASE_MS
    assert decision.previous is not None
    assert decision.previous == after.previous
    assert (decision.previous.epoch, decision.previous.worker_id) == (1, "w1")
    assert decision.previous.last_heartbeat_ms == 4_000


def test_claim_on_completed_before_expiry_is_replayed_with_original_result(op: Op) -> None:
    state = completed(op, {"charge_id": "ch_1"})
    _, decision = fold(state, op.claim("B"), 2_000 + RETENTION_MS - 1)
    assert decision.outcome == "replayed"
    assert decision.changed is False
    assert decision.result == canonical_json({"charge_id": "ch_1"})


@pytest.mark.parametrize("make", [completed, expired])
def test_claim_on_completed_past_expiry_or_expired_is_result_expired(op: Op, make: object) -> None:
    state = make(op)  # type: ignore[operator]
    assert assert_unchanged(state, op.claim("B"), 2_000 + RETENTION_MS) == "result_expired"


def test_claim_on_failed_retryable_is_reclaimed_epoch_plus_1(op: Op) -> None:
    state = failed(op, retryable=True)
    after, decision = fold(state, op.claim("B", worker="w2"), 3_000)
    assert after is not None
    assert decision.outcome == "reclaimed"
    assert (after.status, after.epoch, after.token_fp) == (Status.CLAIMED, 2, fp("B"))
    assert after.error is None
    assert decision.previous is not None
    assert decision.previous.status == Status.FAILED


def test_claim_on_failed_not_retryable_is_failed_with_error(op: Op) -> None:
    state = failed(op, retryable=False)
    after, decision = fold(state, op.claim("B"), 3_000)
    assert after is state
    assert decision.outcome == "failed"
    assert decision.error == "boom"
    assert decision.changed is False


# --- holder requests ---------------------------------------------------------------


def test_heartbeat_by_holder_on_claimed_is_ok_and_extends_deadline(op: Op) -> None:
    state = given([(op.claim("A"), 1_000), (op.cancel(), 1_500)])
    after, decision = fold(state, op.heartbeat("A"), 5_000)
    assert after is not None
    assert decision.outcome == "heartbeat_ok"
    assert decision.changed is True
    assert after.lease_deadline_ms == 5_000 + LEASE_MS
    assert decision.cancel_requested is True
    after2, _ = fold(after, op.heartbeat("A", lease_ms=2_000), 6_000)
    assert after2 is not None
    assert after2.lease_deadline_ms == 8_000


def test_complete_by_holder_on_claimed_even_after_lapse_is_completed(op: Op) -> None:
    state = claimed(op)
    t = 1_000 + LEASE_MS * 3  # lapsed, but nobody reclaimed
    after, decision = fold(state, op.complete("A", {"x": 1}), t)
    assert after is not None
    assert decision.outcome == "completed"
    assert after.status == Status.COMPLETED
    assert after.result == canonical_json({"x": 1})
    assert after.result_hash == _sha(canonical_json({"x": 1}))
    assert (after.completed_at_ms, after.expires_at_ms) == (t, t + RETENTION_MS)


def test_complete_by_holder_on_completed_with_same_result_returns_stored_result(op: Op) -> None:
    state = completed(op, "ok")
    assert assert_unchanged(state, op.complete("A", "ok"), 3_000) == "completed"
    _, decision = fold(state, op.complete("A", "ok"), 3_000)
    assert decision.result == canonical_json("ok")


def test_complete_by_holder_on_completed_with_different_result_is_conflict(op: Op) -> None:
    state = completed(op, "ok")
    _, decision = fold(state, op.complete("A", "other"), 3_000)
    assert decision.outcome == "conflict"
    assert decision.changed is False
    assert decision.stored_hash == _sha(canonical_json("ok"))
    assert decision.request_hash == _sha(canonical_json("other"))


@pytest.mark.parametrize("ending", ["claimed", "completed", "expired", "failed"])
def test_complete_by_an_earlier_grants_token_is_stale_claim_and_suspected(
    op: Op, ending: str
) -> None:
    tail: list[tuple[Request, int]] = {
        "claimed": [],
        "completed": [(op.complete("A"), 2_000)],
        "expired": [(op.complete("A"), 2_000), (op.sweep(), 2_000 + RETENTION_MS)],
        "failed": [(op.fail("A", True), 2_000)],
    }[ending]
    # B held the operation before A (A reclaimed it after B released), then A went on.
    state = given([(op.claim("B"), 0), (op.release("B"), 1), (op.claim("A"), 1_000), *tail])
    after, decision = fold(state, op.complete("B"), 3_000 + RETENTION_MS)
    assert after is state
    assert decision.outcome == "stale_claim"
    assert decision.duplicate_effect_suspected is True


@pytest.mark.parametrize("make", [claimed, completed, expired, lambda op: failed(op, True)])
def test_complete_by_a_token_never_granted_is_stale_claim_not_suspected(
    op: Op, make: object
) -> None:
    state = make(op)  # type: ignore[operator]
    after, decision = fold(state, op.complete("B"), 3_000)
    assert after is state
    assert decision.outcome == "stale_claim"
    assert decision.duplicate_effect_suspected is False  # listed apart: forged_or_unknown_token


@pytest.mark.parametrize("kind", ["heartbeat", "fail", "release"])
@pytest.mark.parametrize("make", [claimed, completed, expired, lambda op: failed(op, True)])
def test_heartbeat_fail_release_by_other_token_is_stale_claim(
    op: Op, make: object, kind: str
) -> None:
    state = make(op)  # type: ignore[operator]
    request = {
        "heartbeat": op.heartbeat("B"),
        "fail": op.fail("B", retryable=True),
        "release": op.release("B"),
    }[kind]
    after, decision = fold(state, request, 3_000)
    assert after is state
    assert decision.outcome == "stale_claim"
    assert decision.duplicate_effect_suspected is False


def test_fail_by_holder_on_claimed_is_failed(op: Op) -> None:
    after, decision = fold(claimed(op), op.fail("A", retryable=False), 2_000)
    assert after is not None
    assert decision.outcome == "failed"
    assert decision.changed is True
    assert (after.status, after.error, after.retryable) == (Status.FAILED, "boom", False)


def test_release_by_holder_on_claimed_sets_deadline_to_t(op: Op) -> None:
    after, decision = fold(claimed(op), op.release("A"), 2_000)
    assert after is not None
    assert decision.outcome == "released"
    assert after.lease_deadline_ms == 2_000
    _, reclaim = fold(after, op.claim("B"), 2_000)
    assert reclaim.outcome == "reclaimed"


# --- cancel, other pairs, sweep ----------------------------------------------------


def test_cancel_on_claimed_sets_flag_as_a_version(op: Op) -> None:
    state = claimed(op)
    after, decision = fold(state, op.cancel("user"), 2_000)
    assert after is not None
    assert decision.outcome == "cancel_requested"
    assert decision.changed is True
    assert (after.cancel_requested, after.cancel_reason) == (True, "user")
    assert after.version == state.version + 1
    assert assert_unchanged(after, op.cancel(), 2_100) == "cancel_requested"


@pytest.mark.parametrize(
    ("make", "outcome"),
    [
        (lambda op: None, "state_absent"),
        (completed, "state_completed"),
        (lambda op: failed(op, False), "state_failed"),
        (expired, "state_expired"),
    ],
)
def test_cancel_on_absent_completed_failed_expired_names_the_state(
    op: Op, make: object, outcome: str
) -> None:
    state = make(op)  # type: ignore[operator]
    assert assert_unchanged(state, op.cancel(), 3_000) == outcome


@pytest.mark.parametrize(
    ("make", "request_of", "outcome"),
    [
        (completed, lambda op: op.heartbeat("A"), "state_completed"),
        (completed, lambda op: op.release("A"), "state_completed"),
        (completed, lambda op: op.fail("A", True), "state_completed"),
        (lambda op: failed(op, True), lambda op: op.heartbeat("A"), "state_failed"),
        (lambda op: failed(op, True), lambda op: op.complete("A"), "state_failed"),
        (expired, lambda op: op.heartbeat("A"), "state_expired"),
        (expired, lambda op: op.complete("A"), "state_expired"),
        (claimed, lambda op: op.sweep(), "state_claimed"),
        (completed, lambda op: op.sweep(), "state_completed"),
        (lambda op: None, lambda op: op.heartbeat("A"), "state_absent"),
        (lambda op: None, lambda op: op.complete("A"), "state_absent"),
        (lambda op: None, lambda op: op.sweep(), "state_absent"),
    ],
)
def test_any_other_pair_names_the_state(
    op: Op, make: object, request_of: object, outcome: str
) -> None:
    state = make(op)  # type: ignore[operator]
    request = request_of(op)  # type: ignore[operator]
    assert assert_unchanged(state, request, 3_000) == outcome


def test_sweep_on_completed_past_expiry_expires_and_purges_body(op: Op) -> None:
    state = completed(op, "secret")
    after, decision = fold(state, op.sweep(), 2_000 + RETENTION_MS)
    assert after is not None
    assert decision.outcome == "expired"
    assert decision.changed is True
    assert after.status == Status.EXPIRED
    assert after.result is None
    kept = ("operation_id", "request_hash", "result_hash", "completed_at_ms", "epoch")
    assert all(getattr(after, name) == getattr(state, name) for name in kept)


def test_expired_is_final(op: Op) -> None:
    state = expired(op)
    for request in (op.claim("A"), op.complete("A"), op.heartbeat("A"), op.sweep(), op.cancel()):
        after, _ = fold(state, request, 10**12)
        assert after is state


# --- retried request ids -----------------------------------------------------------


def test_retried_claim_gets_its_grant_back(op: Op) -> None:
    state = given([(op.claim("A", rid="c1"), 1_000)])
    after, decision = fold(state, op.claim("A", rid="c1"), 1_500)
    assert after is state
    assert (decision.outcome, decision.retried, decision.epoch) == ("claimed", True, 1)


def test_retried_reclaim_after_lapse_does_not_take_effect_twice(op: Op) -> None:
    t = 1_000 + LEASE_MS
    state = given([(op.claim("A"), 1_000), (op.claim("B", rid="c2"), t)])
    after, decision = fold(state, op.claim("B", rid="c2"), t + 10 * LEASE_MS)
    assert after is state
    assert (decision.outcome, decision.epoch, decision.changed) == ("reclaimed", 2, False)


def test_retried_completion_is_a_duplicate_complete(op: Op) -> None:
    state = given([(op.claim("A"), 1_000), (op.complete("A", "ok", rid="k1"), 2_000)])
    after, decision = fold(state, op.complete("A", "ok", rid="k1"), 3_000)
    assert after is state
    assert decision.outcome == "completed"
    assert decision.result == canonical_json("ok")


def test_retried_heartbeat_does_not_extend_twice(op: Op) -> None:
    state = given([(op.claim("A"), 1_000), (op.heartbeat("A", rid="h1"), 2_000)])
    after, decision = fold(state, op.heartbeat("A", rid="h1"), 5_000)
    assert after is state
    assert (decision.outcome, decision.retried) == ("heartbeat_ok", True)
    # The answer names the deadline of the first heartbeat, not one extended from 5 s.
    assert decision.lease_deadline_ms == 2_000 + LEASE_MS


def test_a_claim_answered_in_progress_is_answered_so_again_after_the_lease(op: Op) -> None:
    state = given([(op.claim("A"), 1_000)])
    waited, first = fold(state, op.claim("B", rid="b1"), 2_000)
    after, again = fold(waited, op.claim("B", rid="b1"), 1_000 + LEASE_MS)
    assert (first.outcome, again.outcome) == ("in_progress", "in_progress")
    assert (again.retried, again.changed, after) == (True, False, waited)
    assert after is not None
    assert (after.epoch, after.token_fp) == (1, state.token_fp)


def test_recent_memory_is_bounded_by_log_time_age(op: Op) -> None:
    """Heartbeats every 10 s for 2 h: the memory holds the grant and one window of ids."""
    every = 10_000
    steps = [(op.claim("A"), 0)] + [(op.heartbeat("A"), i * every) for i in range(1, 720)]
    state = given(steps)
    assert state.recent[0].request_id == steps[0][0].request_id  # the grant stays
    assert len(state.recent) == 1 + RETRY_MEMORY_MS // every
    assert state.recent[-1].request_id == steps[-1][0].request_id


# --- log time (docs/spec.md §3: broker time, clamped non-decreasing per partition) ----------


@pytest.mark.parametrize(
    ("broker_ts", "log_times"),
    [
        ([5, 7, 9], [5, 7, 9]),
        ([10, 4, 12], [10, 10, 12]),  # a step back is absorbed
        ([10, 10, 3, 0, 11], [10, 10, 10, 10, 11]),
        ([0, 0], [0, 0]),
    ],
)
def test_partition_clock_never_goes_back(broker_ts: list[int], log_times: list[int]) -> None:
    clock, seen = PartitionClock(), []
    for ts in broker_ts:
        clock, t = clock.advance(ts)
        seen.append(t)
        assert clock.last_ms == t
    assert seen == log_times


def test_a_step_back_in_broker_time_judges_at_the_clamped_time(op: Op) -> None:
    """The lease lapses at 11 s; after a record at 25 s, one stamped 5 s is judged at 25 s."""
    records = [(op.claim("A", worker="w1"), 1_000), (op.sweep(), 25_000), (op.claim("B"), 5_000)]
    clock, state, decisions = PartitionClock(), None, []
    for offset, (request, ts_ms) in enumerate(records):
        clock, state, decision = judge(
            state, request, clock, ts_ms=ts_ms, partition=0, offset=offset
        )
        decisions.append(decision)
    assert clock == PartitionClock(25_000)
    assert decisions[2].outcome == "reclaimed"
    assert state is not None
    assert state.lease_deadline_ms == 25_000 + LEASE_MS


# --- seed cases --------------------------------------------------------------------


def test_seed_retry_after_lost_completion_response_is_replayed(op: Op) -> None:
    _state, decisions = run(
        [
            (op.claim("A"), 1_000),
            (op.complete("A", {"charge_id": "ch_1"}), 2_000),
            (op.claim("A2"), 3_000),  # the worker restarted and retries with a new attempt
        ]
    )
    assert decisions[-1].outcome == "replayed"
    assert decisions[-1].result == canonical_json({"charge_id": "ch_1"})


def test_seed_changed_payload_is_conflict_with_both_hashes(op: Op) -> None:
    first = op.claim("A", params={"order_id": "4471", "amount_cents": 4200})
    changed = op.claim("B", params={"order_id": "4471", "amount_cents": 9900})
    _, decisions = run([(first, 1_000), (changed, 2_000)])
    assert decisions[-1].outcome == "conflict"
    assert decisions[-1].stored_hash == first.body.request_hash  # type: ignore[union-attr]
    assert decisions[-1].request_hash == changed.body.request_hash  # type: ignore[union-attr]


def test_seed_volatile_field_outside_dedup_fields_is_replayed(op: Op) -> None:
    first = op.claim("A", params={"order_id": "4471", "ts": 1}, dedup=["order_id"])
    again = op.claim("B", params={"order_id": "4471", "ts": 2}, dedup=["order_id"])
    _, decisions = run([(first, 1_000), (op.complete("A"), 1_500), (again, 2_000)])
    assert decisions[-1].outcome == "replayed"


def test_seed_live_lease_is_in_progress(op: Op) -> None:
    _, decisions = run([(op.claim("A"), 1_000), (op.claim("B"), 2_000)])
    assert decisions[-1].outcome == "in_progress"


def test_seed_expired_lease_is_reclaimed_epoch_plus_1(op: Op) -> None:
    state, decisions = run([(op.claim("A"), 1_000), (op.claim("B"), 1_000 + LEASE_MS + 1)])
    assert decisions[-1].outcome == "reclaimed"
    assert state is not None
    assert state.epoch == 2


def test_seed_stale_token_is_stale_claim(op: Op) -> None:
    _, decisions = run(
        [(op.claim("A"), 1_000), (op.claim("B"), 1_000 + LEASE_MS), (op.heartbeat("A"), 20_000)]
    )
    assert decisions[-1].outcome == "stale_claim"


def test_seed_duplicate_complete_makes_no_new_version(op: Op) -> None:
    state, decisions = run(
        [(op.claim("A"), 1_000), (op.complete("A"), 2_000), (op.complete("A"), 2_500)]
    )
    assert state is not None
    assert decisions[-1].changed is False
    assert state.version == 2


def test_seed_after_retention_result_expired_identity_kept(op: Op) -> None:
    end = 2_000 + RETENTION_MS
    state, decisions = run(
        [(op.claim("A"), 1_000), (op.complete("A"), 2_000), (op.sweep(), end), (op.claim("B"), end)]
    )
    assert decisions[-1].outcome == "result_expired"
    assert state is not None
    assert (state.operation_id, state.key_name) == (op.operation_id, op.key_name)


def test_claim_without_token_is_invalid_request(op: Op) -> None:
    bad = op.request(None, op.claim("A").body)
    assert assert_unchanged(None, bad, 1) == "invalid_request"
    assert assert_unchanged(claimed(op), bad, 2_000) == "invalid_request"


# --- get: a read through the log (not in the spec's table: it never changes anything) ---


def test_get_on_absent_names_the_absent_state(op: Op) -> None:
    assert assert_unchanged(None, op.get(), 1_000) == "state_absent"


@pytest.mark.parametrize(
    ("make", "named"),
    [(claimed, "state_claimed"), (completed, "state_completed"), (expired, "state_expired")],
)
def test_get_names_the_state_and_carries_it_unchanged(op: Op, make: object, named: str) -> None:
    state = make(op)  # type: ignore[operator]
    after, decision = fold(state, op.get(), 10**9)
    assert after is state
    assert decision.outcome == named
    assert decision.changed is False
    assert decision.state is state


# --- clock steps (docs/spec.md §4, "Clock steps") ----------------------------------

STEP = 30_000  # the ledger's bound on a step of the leader's clock


def test_claim_lapsed_within_the_clock_step_bound_is_in_progress(op: Op) -> None:
    """A lapse no longer than the bound may be a step of the leader's clock: the holder
    keeps the lease; the claim is answered (and remembered) ``in_progress``."""
    state = given([(op.claim("A"), 1_000), (op.heartbeat("A"), 4_000)])
    for t in (4_000 + LEASE_MS, 4_000 + LEASE_MS + STEP - 1):
        after, decision = fold(state, op.claim("B", worker="w2"), t, STEP)
        assert after is not None
        assert (decision.outcome, decision.changed) == ("in_progress", True)
        assert (after.epoch, after.token_fp, after.status) == (1, fp("A"), Status.CLAIMED)
        assert after.lease_deadline_ms == 4_000 + LEASE_MS


def test_claim_lapsed_by_the_clock_step_bound_is_reclaimed(op: Op) -> None:
    state = given([(op.claim("A"), 1_000), (op.heartbeat("A"), 4_000)])
    after, decision = fold(state, op.claim("B", worker="w2"), 4_000 + LEASE_MS + STEP, STEP)
    assert after is not None
    assert (decision.outcome, after.epoch, after.token_fp) == ("reclaimed", 2, fp("B"))
    assert decision.previous is not None
    assert decision.previous.outcome_unknown


def test_claim_after_a_release_is_reclaimed_at_once_whatever_the_bound(op: Op) -> None:
    state = given([(op.claim("A"), 1_000), (op.release("A"), 2_000)])
    assert fold(state, op.claim("B"), 2_000, STEP)[1].outcome == "reclaimed"


def test_claim_after_a_release_taken_back_by_a_heartbeat_waits_the_bound(op: Op) -> None:
    state = given([(op.claim("A"), 1_000), (op.release("A"), 2_000), (op.heartbeat("A"), 3_000)])
    assert fold(state, op.claim("B"), 3_000 + LEASE_MS, STEP)[1].outcome == "in_progress"
    assert fold(state, op.claim("B"), 3_000 + LEASE_MS + STEP, STEP)[1].outcome == "reclaimed"


def test_claim_on_failed_retryable_is_reclaimed_at_once_whatever_the_bound(op: Op) -> None:
    state = failed(op, retryable=True)
    assert fold(state, op.claim("B"), 2_000, STEP)[1].outcome == "reclaimed"


def test_the_bound_is_passed_through_judge(op: Op) -> None:
    state = claimed(op)
    t = 1_000 + LEASE_MS
    bounded = judge(state, op.claim("B"), PartitionClock(), ts_ms=t, partition=0, offset=1,
                    max_clock_step_ms=STEP)  # fmt: skip
    assert bounded.decision.outcome == "in_progress"
    unbounded = judge(state, op.claim("B"), PartitionClock(), ts_ms=t, partition=0, offset=1)
    assert unbounded.decision.outcome == "reclaimed"
