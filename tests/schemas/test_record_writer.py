"""The writers of states, snapshots and decisions generated from the .avsc, against fastavro."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest
from fastavro.schema import to_parsing_canonical_form
from hypothesis import given, settings
from hypothesis import strategies as st

from oncelog.projector import state_blob
from oncelog.projector.state_blob import decode_state, encode_state
from oncelog.schemas import codec, convert
from oncelog.schemas.byte_budget import BytesMemo, entry_bytes
from oncelog.schemas.codec import (
    DECISION,
    MAGIC,
    REGISTRY,
    SNAPSHOT,
    SchemaRegistry,
    decode_decision,
    decode_snapshot,
    default_registry,
    encode_decision,
    encode_snapshot,
)
from oncelog.schemas.models import (
    Approval,
    Decision,
    Effect,
    ExecutionSnapshot,
    ExecutionState,
    Inheritance,
    Kind,
    Outcome,
    PreviousAttempt,
    RecentRequest,
    Status,
    evolve,
)
from oncelog.schemas.record_writer import StateBodies, state_body, write_long
from oncelog.testing.clock import ManualClock
from tests.budget import examples
from tests.projector.fold_factories import Op, run

# The generated codecs of the current layout (a record without approvals takes the previous).
pytestmark = pytest.mark.usefixtures("current_layout", "writers")

# Around every varint width: one byte, two, the millisecond epoch, the 64-bit ends.
LONGS = (
    st.integers(-(2**63), 2**63 - 1)
    | st.integers(-70, 70)
    | st.integers(-9_000, 9_000)
    | st.integers(1_600_000_000_000, 1_800_000_000_000)
    | st.sampled_from([0, -1, 63, 64, -64, -65, 8191, 8192, 2**63 - 1, -(2**63)])
)
INTS = st.integers(-(2**31), 2**31 - 1)  # source_partition is an Avro int
TEXTS = st.text(max_size=40) | st.text(min_size=60, max_size=120)  # 1- and 2-byte lengths
BLOBS = st.binary(max_size=40) | st.binary(min_size=60, max_size=300)


def _opt(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


PREVIOUS = st.builds(
    PreviousAttempt,
    LONGS,
    TEXTS,
    TEXTS,
    LONGS,
    _opt(LONGS),
    st.sampled_from(Status),
    _opt(TEXTS),
    st.booleans(),
)
RECENT = st.lists(
    st.builds(RecentRequest, TEXTS, st.sampled_from(Outcome), LONGS, TEXTS, TEXTS, LONGS, TEXTS),
    max_size=70,
).map(tuple)  # over 63 items: a two-byte block count
STATES = st.builds(
    ExecutionState,
    operation_id=TEXTS,
    channel_id=TEXTS,
    key_name=TEXTS,
    status=st.sampled_from(Status),
    version=LONGS,
    epoch=LONGS,
    request_hash=TEXTS,
    tool_name=TEXTS,
    params=BLOBS,
    effect=st.sampled_from(Effect),
    lease_ms=LONGS,
    retention_ms=LONGS,
    token_fp=TEXTS,
    worker_id=TEXTS,
    claimed_at_ms=LONGS,
    lease_deadline_ms=LONGS,
    last_heartbeat_ms=_opt(LONGS),
    cancel_requested=st.booleans(),
    cancel_reason=_opt(TEXTS),
    result=_opt(BLOBS),
    result_hash=_opt(TEXTS),
    completed_at_ms=_opt(LONGS),
    expires_at_ms=_opt(LONGS),
    error=_opt(TEXTS),
    retryable=st.booleans(),
    released=st.booleans(),
    previous=_opt(PREVIOUS),
    recent=st.just(()) | RECENT,
    updated_at_ms=LONGS,
    inherited=_opt(st.builds(Inheritance, TEXTS, INTS, LONGS, st.booleans())),
    approval=_opt(
        st.builds(
            Approval,
            LONGS,
            LONGS,
            TEXTS,
            st.booleans(),
            st.booleans(),
            _opt(TEXTS),
            _opt(LONGS),
            _opt(TEXTS),
        )
    ),
)
SNAPSHOTS = st.builds(
    ExecutionSnapshot,
    state=STATES,
    source_partition=INTS,
    source_offset=LONGS,
    source_request_id=TEXTS,
    outcome=st.sampled_from(Outcome),
    log_time_ms=LONGS,
)
DECISIONS = st.builds(
    Decision,
    request_id=TEXTS,
    operation_id=TEXTS,
    kind=st.sampled_from(Kind),
    outcome=st.sampled_from(Outcome),
    changed=st.booleans(),
    log_time_ms=LONGS,
    state=_opt(STATES),
    epoch=_opt(LONGS),
    retried=st.booleans(),
    stored_hash=_opt(TEXTS),
    request_hash=_opt(TEXTS),
    result=_opt(BLOBS),
    error=_opt(TEXTS),
    duplicate_effect_suspected=st.booleans(),
    previous=_opt(PREVIOUS),
    source_partition=INTS,
    source_offset=LONGS,
)


def _fastavro(schema: Any, datum: Any) -> bytes:
    """The reference: fastavro with the same schema."""
    buf = io.BytesIO()
    buf.write(MAGIC + codec.schema_fingerprint(schema))
    fastavro.schemaless_writer(buf, schema, datum)
    return buf.getvalue()


# --- the schema guard ---------------------------------------------------------------


def test_the_writers_are_generated_from_the_current_schema_files() -> None:
    """The fast paths are on for the package's own schemas."""
    current = default_registry().current
    assert to_parsing_canonical_form(state_blob._SCHEMA) == to_parsing_canonical_form(
        current[SNAPSHOT]["fields"][0]["type"]
    )
    assert REGISTRY.current_fingerprint[SNAPSHOT] == codec._FAST_SNAPSHOT
    assert REGISTRY.current_fingerprint[DECISION] == codec._FAST_DECISION


def test_another_current_schema_takes_fastavro() -> None:
    schema = json.loads((codec.SCHEMA_DIR / "decision.avsc").read_text("utf-8"))
    schema["fields"].append({"name": "extra", "type": "long", "default": 5})
    registry = SchemaRegistry()
    registry.add_current(fastavro.parse_schema(schema, named_schemas=_named_types()))
    decision = Decision("r", "o", Kind.SWEEP, Outcome.STATE_ABSENT, False, 7)
    data = encode_decision(decision, registry)
    assert data[2:10] == registry.current_fingerprint[DECISION] != codec._FAST_DECISION
    # fastavro wrote the same fields, then the new one's default
    assert data[10:] == encode_decision(decision)[10:] + write_long(5)
    assert decode_decision(data, registry) == decision


def _named_types() -> dict[str, Any]:
    named: dict[str, Any] = {}
    fastavro.parse_schema(REGISTRY.current[SNAPSHOT], named_schemas=named)
    return named


# --- bytes equal fastavro's, and decode back ----------------------------------------


@settings(max_examples=examples(1_000), deadline=None)
@given(state=STATES)
def test_a_state_encoded_once_is_the_memoized_blob(state: ExecutionState) -> None:
    assert encode_state(state, once=True) == encode_state(state)


@settings(max_examples=examples(1_000), deadline=None)
@given(state=STATES)
def test_state_blob_equals_fastavro(state: ExecutionState) -> None:
    data = encode_state(state)
    assert data == _fastavro(state_blob._SCHEMA, convert.state_to_avro(state))
    assert decode_state(data) == state


@settings(max_examples=examples(1_500), deadline=None)
@given(decision=DECISIONS)
def test_decision_equals_fastavro(decision: Decision) -> None:
    data = encode_decision(decision)
    assert data == _fastavro(REGISTRY.current[DECISION], convert.decision_to_avro(decision))
    assert decode_decision(data) == decision


@settings(max_examples=examples(600), deadline=None)
@given(snapshot=SNAPSHOTS)
def test_snapshot_equals_fastavro(snapshot: ExecutionSnapshot) -> None:
    data = encode_snapshot(snapshot)
    assert data == _fastavro(REGISTRY.current[SNAPSHOT], convert.snapshot_to_avro(snapshot))
    assert decode_snapshot(data) == snapshot


def test_fold_lifecycle_records_equal_fastavro() -> None:
    op = Op()
    steps = [
        (op.claim("t1"), 1_700_000_000_000),
        (op.heartbeat("t1"), 1_700_000_001_000),
        (op.cancel(), 1_700_000_002_000),
        (op.claim("t2"), 1_700_000_900_000),  # a reclaim after expiry: previous is set
        (op.complete("t2"), 1_700_000_901_000),
        (op.claim("t3"), 1_700_000_902_000),  # replayed
    ]
    _, decisions = run(steps)
    for folded in decisions:
        decision = evolve(folded, source_partition=2, source_offset=10**9)
        reference = _fastavro(REGISTRY.current[DECISION], convert.decision_to_avro(decision))
        assert encode_decision(decision) == reference
        if decision.changed and decision.state is not None:
            snapshot = ExecutionSnapshot(decision.state, 2, 10**9, "r", decision.outcome, 1)
            reference = _fastavro(REGISTRY.current[SNAPSHOT], convert.snapshot_to_avro(snapshot))
            assert encode_snapshot(snapshot) == reference


def test_big_lengths_take_three_byte_varints() -> None:
    state = _a_state(params=b"p" * 20_000, error="é" * 5_000)
    assert encode_state(state) == _fastavro(state_blob._SCHEMA, convert.state_to_avro(state))


# --- longs ---------------------------------------------------------------------------


@settings(max_examples=examples(2_000), deadline=None)
@given(n=LONGS)
def test_write_long_equals_fastavro(n: int) -> None:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, "long", n)
    assert write_long(n) == buf.getvalue()


@pytest.mark.parametrize("n", [2**63, -(2**63) - 1, 2**70, -(2**80)])
def test_write_long_out_of_range_overflows_like_fastavro(n: int) -> None:
    with pytest.raises(OverflowError):
        fastavro.schemaless_writer(io.BytesIO(), "long", n)
    with pytest.raises(OverflowError):
        write_long(n)


# --- the memo of state bodies --------------------------------------------------------


def _a_state(**changes: Any) -> ExecutionState:
    base = ExecutionState(
        "op", "ch", "k", Status.CLAIMED, 1, 1, "h", "tool", b"{}", Effect.PURE,
        10, 20, "t", "w", 1, 11,
    )  # fmt: skip
    return evolve(base, **changes)


def test_memo_writes_a_state_once_and_equal_states_alike() -> None:
    state = _a_state()
    first = codec._STATE_BODIES.body(state)
    assert codec._STATE_BODIES.body(state) is first
    twin = _a_state()
    assert twin is not state
    assert codec._STATE_BODIES.body(twin) == first


def test_memo_is_by_identity_and_survives_reused_ids() -> None:
    bodies = StateBodies(state_body, budget_bytes=8 * entry_bytes(state_body(_a_state())))
    for version in range(200):
        state = _a_state(version=version)  # freed each round: ids get reused
        assert bodies.body(state) == state_body(state)
        del state  # refcounting frees it at once


def test_memo_generations_keep_recent_states() -> None:
    states = [_a_state(version=v) for v in range(5)]
    hot = states[0]
    # two per generation
    bodies = StateBodies(state_body, budget_bytes=4 * entry_bytes(state_body(hot)))
    hot_body = bodies.body(hot)
    for state in states[1:]:
        bodies.body(state)
        assert bodies.body(hot) is hot_body  # promoted on every hit: never evicted
    bodies.clear()
    assert bodies.body(hot) is not hot_body
    assert bodies.body(hot) == hot_body


def test_state_bodies_are_bounded_by_bytes_not_entries() -> None:
    small = _a_state()
    big = _a_state(params=b"x" * 100_000)
    bodies = StateBodies(state_body, budget_bytes=4 * entry_bytes(state_body(small)))
    small_body = bodies.body(small)
    assert bodies.body(big) == state_body(big)  # kept, alone, in a generation of its own
    assert bodies.body(small) is small_body  # the old generation still had it
    for _ in range(3):
        bodies.body(big)
    assert bodies.body(small) == small_body


def test_bytes_memo_forgets_everything_before_passing_its_budget() -> None:
    memo: BytesMemo[str] = BytesMemo(budget_bytes=3 * entry_bytes(b"abcd"))
    for key in ("a", "b", "c"):
        memo.put(key, b"abcd")
    assert memo.get("a") == b"abcd"
    assert memo.held_bytes == 3 * entry_bytes(b"abcd")
    memo.put("d", b"abcd")  # one more would pass the budget: start over
    assert memo.get("a") is None
    assert memo.get("d") == b"abcd"
    assert memo.held_bytes == entry_bytes(b"abcd")


def test_bytes_memo_starts_over_after_its_age_however_little_it_holds() -> None:
    clock = ManualClock(start_ms=0)
    memo: BytesMemo[str] = BytesMemo(1 << 20, max_age_s=60.0, clock=lambda: clock.now_ms() / 1000)
    memo.put("a", b"abcd")
    clock.advance(59)
    memo.put("b", b"abcd")
    assert memo.get("a") == b"abcd"
    clock.advance(2)  # 61 s since the memo started
    memo.put("c", b"abcd")
    assert memo.get("a") is None
    assert memo.get("b") is None
    assert memo.held_bytes == entry_bytes(b"abcd")


def test_state_bodies_let_go_of_states_after_their_age() -> None:
    clock = ManualClock(start_ms=0)
    bodies = StateBodies(state_body, max_age_s=60.0, clock=lambda: clock.now_ms() / 1000)
    old = _a_state(version=0)
    old_body = bodies.body(old)
    for version in (1, 2):
        clock.advance(31)  # past a generation's half of the age: the next write turns it
        bodies.body(_a_state(version=version))
    # Two turns later, the generation that held it is gone, though nearly empty.
    assert bodies.body(old) is not old_body
    assert bodies.body(old) == old_body


def test_state_bodies_keep_a_state_through_one_turn() -> None:
    clock = ManualClock(start_ms=0)
    bodies = StateBodies(state_body, max_age_s=60.0, clock=lambda: clock.now_ms() / 1000)
    old = _a_state(version=0)
    old_body = bodies.body(old)
    clock.advance(31)
    bodies.body(_a_state(version=1))
    assert bodies.body(old) is old_body  # in the old generation still


def test_bytes_memo_never_keeps_a_value_larger_than_its_budget() -> None:
    memo: BytesMemo[str] = BytesMemo(budget_bytes=1_000)
    memo.put("small", b"x")
    memo.put("huge", b"x" * 1_000)
    assert memo.get("huge") is None
    assert memo.held_bytes == 0


def test_a_long_error_text_is_written_right_and_not_memoized_past_the_budget() -> None:
    error = "e" * (20 << 20)  # more than the text memo's whole budget
    state = _a_state(error=error)
    assert state_blob.encode_state(state) == _fastavro(
        state_blob._SCHEMA, convert.state_to_avro(state)
    )
