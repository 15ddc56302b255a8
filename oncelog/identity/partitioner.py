"""Kafka's default partitioner, bit for bit, so that placement matches Java clients.

librdkafka's default is CRC32-based; oncelog computes the partition itself so
that every record of one channel lands where a Java producer would put it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from oncelog.errors import InvalidArgumentError

_SEED: Final = 0x9747B28C
_M: Final = 0x5BD1E995
_MASK: Final = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: a signed 32-bit MurmurHash2 with Kafka's seed."""
    length = len(data)
    h = (_SEED ^ length) & _MASK
    full = length - length % 4
    for i in range(0, full, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[full + 2] << 16
    if tail >= 2:
        h ^= data[full + 1] << 8
    if tail >= 1:
        h ^= data[full]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit (not ``abs``)."""
    return number & 0x7FFFFFFF


def partition_for(channel_id: str, num_partitions: object) -> int:
    """The partition Kafka's default partitioner picks for key ``channel_id``.

    ``num_partitions`` is checked here (a bool or a float is refused), so it is typed
    ``object``: compiled, an ``int`` parameter would take ``True`` as 1.
    """
    if isinstance(num_partitions, bool) or not isinstance(num_partitions, int):
        raise InvalidArgumentError("num_partitions must be an int")
    if num_partitions < 1:
        raise InvalidArgumentError(f"num_partitions must be >= 1, got {num_partitions}")
    return to_positive(murmur2(channel_id.encode("utf-8"))) % num_partitions


# The SDK sends, and the projector checks, many requests of each channel (a claim, its
# heartbeats, its completion, the other steps): murmur2 in Python costs far more than a
# hit (docs/performance.md). Failures raise and are never cached. Sized to the channels
# in flight, not to the history, which it would only grow with.
cached_partition_for: Final = lru_cache(maxsize=4096)(partition_for)
""":func:`partition_for`, remembering recent answers (the hot paths use it)."""


def reply_partition_for(requested: int | None, source_partition: int, reply_partitions: int) -> int:
    """The partition of ``<prefix>.decisions`` a request's decision is written to.

    The one the request names, when it names one that exists. Otherwise (``None``: an
    older writer or the projector's own sweep tick; or out of range: a client that
    counted wrong) the request's own partition modulo the decisions topic's count.
    A pure function of the request and the topic, so that a refold republishes each
    decision byte for byte to the same partition, and bad input never stops a partition.
    """
    if requested is not None and 0 <= requested < reply_partitions:
        return requested
    return source_partition % reply_partitions
