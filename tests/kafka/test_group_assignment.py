"""A member's assignment bytes read back (Kafka's ConsumerProtocolAssignment). No I/O."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oncelog.kafka.group_assignment import MalformedAssignmentError, assigned_partitions

TOPIC = "t.requests"


def encode(
    assignment: dict[str, list[int]], version: int = 1, user_data: bytes | None = None
) -> bytes:
    """What a group leader's assignor sends in SyncGroup (the Java client's layout)."""
    out = struct.pack(">hi", version, len(assignment))
    for topic, partitions in assignment.items():
        name = topic.encode()
        out += struct.pack(">h", len(name)) + name
        out += struct.pack(">i", len(partitions)) + b"".join(
            struct.pack(">i", p) for p in partitions
        )
    if user_data is None:
        return out + struct.pack(">i", -1)
    return out + struct.pack(">i", len(user_data)) + user_data


topics = st.dictionaries(
    st.text(min_size=1, max_size=20),
    st.lists(st.integers(0, 2**31 - 1), max_size=8),
    max_size=4,
)


@given(topics, st.integers(0, 3), st.none() | st.binary(max_size=16))
def test_the_topics_partitions_come_back_in_order(
    assignment: dict[str, list[int]], version: int, user_data: bytes | None
) -> None:
    data = encode(assignment, version, user_data)
    for topic, partitions in assignment.items():
        assert assigned_partitions(data, topic) == tuple(partitions)
    assert assigned_partitions(data, "no-such-topic") == ()


def test_no_assignment_assigns_nothing() -> None:
    # A group in the middle of a rebalance lists its members without one.
    assert assigned_partitions(None, TOPIC) == ()
    assert assigned_partitions(b"", TOPIC) == ()


def test_a_truncated_assignment_is_malformed_not_short() -> None:
    data = encode({TOPIC: [0, 1, 2]})
    with pytest.raises(MalformedAssignmentError, match="more wanted"):
        assigned_partitions(data[:-8], TOPIC)


def test_a_huge_count_is_malformed_and_allocates_nothing() -> None:
    with pytest.raises(MalformedAssignmentError, match="array of"):
        assigned_partitions(struct.pack(">hi", 0, 2**31 - 1), TOPIC)


@given(st.binary(max_size=64))
def test_any_bytes_read_as_partitions_or_are_malformed(data: bytes) -> None:
    try:
        partitions = assigned_partitions(data, TOPIC)
    except MalformedAssignmentError:
        return
    assert all(isinstance(p, int) for p in partitions)
