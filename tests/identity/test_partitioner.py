"""Kafka's default partitioner, checked against Kafka's and librdkafka's own vectors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oncelog.errors import InvalidArgumentError
from oncelog.identity.partitioner import murmur2, partition_for, reply_partition_for, to_positive

# From apache/kafka clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java,
# testMurmur2 (commit f55581dc73953c3509a4702433aeeeddc2970779).
KAFKA_UTILS_TEST = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}

# From confluentinc/librdkafka src/rdmurmur2.c, unittest_murmur2 (java_murmur2_results,
# given there as int32 hex; the aligned/unaligned variants are the same bytes for us).
_PRE = b"PreAmbleWillBeRemoved,ThePrePartThatIs"
LIBRDKAFKA = {
    b"kafka": 0xD067CF64,
    b"giberish123456789": 0x8F552B0C,
    b"1234": 0x9FC97B14,
    b"234": 0xE7C009CA,
    b"34": 0x873930DA,
    b"4": 0x5A4B5CA1,
    _PRE: 0x78424F1C,
    _PRE[1:]: 0x4A62B377,
    _PRE[2:]: 0xE0E4E09E,
    _PRE[3:]: 0x62B8B43F,
    b"": 0x106E08D9,
}


def _signed(value: int) -> int:
    return value - (1 << 32) if value & 0x80000000 else value


@pytest.mark.parametrize(("data", "expected"), KAFKA_UTILS_TEST.items())
def test_murmur2_matches_kafka_utils_test(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


@pytest.mark.parametrize(("data", "expected"), LIBRDKAFKA.items())
def test_murmur2_matches_librdkafka_unittest(data: bytes, expected: int) -> None:
    assert murmur2(data) == _signed(expected)


def test_to_positive_clears_the_sign_bit_like_kafka() -> None:
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert to_positive(5) == 5


def test_partition_for_is_to_positive_murmur2_mod_n() -> None:
    for channel in ("run-42", "канал", "", "a" * 300):
        for n in (1, 3, 6, 1024):
            expected = (murmur2(channel.encode()) & 0x7FFFFFFF) % n
            assert partition_for(channel, n) == expected
    assert partition_for("foobar", 6) == (-790332482 & 0x7FFFFFFF) % 6


@pytest.mark.parametrize("bad", [0, -1, True, 2.0])
def test_partition_for_refuses_bad_partition_counts(bad: object) -> None:
    with pytest.raises(InvalidArgumentError):
        partition_for("run", bad)


@given(
    requested=st.none() | st.integers(-(2**31), 2**31 - 1),
    source=st.integers(0, 1023),
    count=st.integers(1, 1024),
)
def test_every_decision_lands_on_an_existing_reply_partition(
    requested: int | None, source: int, count: int
) -> None:
    chosen = reply_partition_for(requested, source, count)
    assert 0 <= chosen < count
    if requested is not None and 0 <= requested < count:
        assert chosen == requested
    else:
        assert chosen == source % count


def test_reply_partition_rule_at_the_edges() -> None:
    assert reply_partition_for(31, 5, 32) == 31
    assert reply_partition_for(32, 5, 32) == 5  # one past the end: the default
    assert reply_partition_for(-1, 5, 32) == 5
    assert reply_partition_for(None, 5, 32) == 5
    assert reply_partition_for(None, 40, 32) == 8  # more requests partitions than reply ones
