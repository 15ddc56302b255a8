"""The Decision reader generated from decision.avsc agrees with fastavro, or steps aside.

On every decision written with the current schema it must return exactly what
the fastavro path returns; on any other bytes it may only return ``None`` (then
the codec asks fastavro) or that same value.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oncelog.errors import CodecError
from oncelog.schemas import codec, convert
from oncelog.schemas.codec import DECISION, REGISTRY, decode_decision, encode_decision
from oncelog.schemas.fast_paths import FastPath
from oncelog.schemas.models import (
    Approval,
    Decision,
    Effect,
    ExecutionState,
    Inheritance,
    Kind,
    Outcome,
    PreviousAttempt,
    RecentRequest,
    Status,
)
from tests.budget import examples
from tests.schemas.conftest import reader_paths, same_types
from tests.schemas.corruption import corrupt

# The generated codecs of the current layout (a record without approvals takes the previous).
pytestmark = pytest.mark.usefixtures("current_layout")

LONGS = st.integers(-(2**63), 2**63 - 1)
INTS = st.integers(-(2**31), 2**31 - 1)
# Mostly short (one-byte lengths), sometimes past 63 bytes (multi-byte lengths).
TEXT = st.text(max_size=5) | st.text(min_size=60, max_size=120)
BLOBS = st.binary(max_size=5) | st.binary(min_size=60, max_size=120)
PREVIOUS = st.builds(
    PreviousAttempt, LONGS, TEXT, TEXT, LONGS, st.none() | LONGS, st.sampled_from(Status),
    st.none() | TEXT, st.booleans(),
)  # fmt: skip
RECENT = st.builds(RecentRequest, TEXT, st.sampled_from(Outcome), LONGS, TEXT, TEXT, LONGS, TEXT)
STATES = st.builds(
    ExecutionState, TEXT, TEXT, TEXT, st.sampled_from(Status), LONGS, LONGS, TEXT, TEXT, BLOBS,
    st.sampled_from(Effect), LONGS, LONGS, TEXT, TEXT, LONGS, LONGS, st.none() | LONGS,
    st.booleans(), st.none() | TEXT, st.none() | BLOBS, st.none() | TEXT, st.none() | LONGS,
    st.none() | LONGS, st.none() | TEXT, st.booleans(), st.booleans(), st.none() | PREVIOUS,
    st.lists(RECENT, max_size=4).map(tuple), LONGS,
    st.none() | st.builds(Inheritance, TEXT, INTS, LONGS, st.booleans()),
    st.none() | st.builds(Approval, LONGS, LONGS, TEXT, st.booleans(), st.booleans(),
                          st.none() | TEXT, st.none() | LONGS, st.none() | TEXT),
)  # fmt: skip
DECISIONS = st.builds(
    Decision, TEXT, TEXT, st.sampled_from(Kind), st.sampled_from(Outcome), st.booleans(), LONGS,
    st.none() | STATES, st.none() | LONGS, st.booleans(), st.none() | TEXT, st.none() | TEXT,
    st.none() | BLOBS, st.none() | TEXT, st.booleans(), st.none() | PREVIOUS, INTS, LONGS,
)  # fmt: skip


def _fastavro(data: bytes) -> Decision:
    """The reference: the fastavro path the codec used before the reader."""
    return codec._decode(REGISTRY, DECISION, data, convert.decision_from_avro)


# The generated Python readers, and the extension's where it is built.
PATHS = reader_paths(codec._PYTHON_DECISIONS, codec._FAST_DECISIONS)
by_path = pytest.mark.parametrize("path", PATHS)


def read_decision(data: bytes, path: FastPath) -> Decision | None:
    """The reader alone (``None``: it leaves the record to fastavro)."""
    decision: Decision | None = path.read(data, REGISTRY)
    return decision


def test_the_reader_is_generated_from_the_current_schema() -> None:
    assert REGISTRY.current_fingerprint[DECISION] == codec._FAST_DECISION
    assert codec._FAST_DECISIONS.fingerprint == codec._FAST_DECISION


@settings(max_examples=examples(1_000), deadline=None)
@given(decision=DECISIONS)
@by_path
def test_reader_equals_fastavro_on_every_valid_record(decision: Decision, path: FastPath) -> None:
    data = encode_decision(decision)
    fast = read_decision(data, path)
    assert fast is not None
    assert fast == decision
    assert fast == _fastavro(data)
    same_types(fast, decision)
    by_fastavro = codec._encode(REGISTRY, DECISION, convert.decision_to_avro(decision))
    assert read_decision(by_fastavro, path) == decision
    assert decode_decision(data) == decision


@st.composite
def _corrupted(draw: st.DrawFn) -> bytes:
    return corrupt(draw, encode_decision(draw(DECISIONS)))


@settings(max_examples=examples(1_000), deadline=None)
@given(data=_corrupted())
@by_path
def test_reader_on_corrupt_bytes_steps_aside_or_agrees(data: bytes, path: FastPath) -> None:
    fast = read_decision(data, path)
    try:
        reference = _fastavro(data)
    except CodecError:
        assert fast is None
        return
    assert fast is None or fast == reference
    assert decode_decision(data) == reference


@by_path
def test_a_long_retry_memory_is_read_not_left_to_fastavro(path: FastPath) -> None:
    # 70 items: the array's count takes two bytes, past the reader's one-byte fast path.
    item = RecentRequest("r", Outcome.CLAIMED, 1, "fp", "pl", 1_764_600_000_000)
    state = ExecutionState(
        "op", "ch", "k", Status.CLAIMED, 1, 1, "h", "t", b"{}", Effect.EXTERNAL, 60_000,
        604_800_000, "fp", "w", 1_764_600_000_000, 1_764_600_060_000, recent=(item,) * 70,
    )  # fmt: skip
    decision = Decision("r", "op", Kind.CLAIM, Outcome.CLAIMED, True, 5, state, epoch=1)
    data = encode_decision(decision)
    assert read_decision(data, path) == decision == _fastavro(data)
