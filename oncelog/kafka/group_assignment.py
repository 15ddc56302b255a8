"""A consumer group member's assignment, as the group coordinator stores it (pure, no I/O).

``DescribeGroups`` answers each member's assignment as the bytes its group's leader sent
in ``SyncGroup``: Kafka's ``ConsumerProtocolAssignment``, the same layout in every version
for what is read here::

    version          int16
    assignments      int32 count, then per topic:
        topic        int16 length + UTF-8
        partitions   int32 count + int32 each
    user_data        int32 length (-1: null) + bytes    (ignored)

Later versions only append fields after these, so a reader of this prefix reads them all.
"""

from __future__ import annotations

import struct
from typing import Final

_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")


class MalformedAssignmentError(ValueError):
    """The bytes are not a consumer protocol assignment (truncated or negative counts)."""


def assigned_partitions(data: bytes | None, topic: str) -> tuple[int, ...]:
    """The partitions of ``topic`` in a member's assignment bytes, in the order sent.

    ``None`` or empty bytes (a group in the middle of a rebalance lists no assignment)
    assign nothing. Raises :class:`MalformedAssignmentError` for anything else unreadable.
    """
    if not data:
        return ()
    reader = _Reader(data)
    reader.i16()  # version
    found: list[int] = []
    for _ in range(reader.count()):
        name = reader.take(reader.i16()).decode("utf-8", errors="replace")
        partitions = [reader.i32() for _ in range(reader.count())]
        if name == topic:
            found += partitions
    return tuple(found)


class _Reader:
    """Big-endian fields read one after another from ``data``; short data is malformed."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 0

    def take(self, size: int) -> bytes:
        if size < 0 or self._at + size > len(self._data):
            raise MalformedAssignmentError(
                f"assignment of {len(self._data)} bytes: {size} more wanted at byte {self._at}"
            )
        chunk = self._data[self._at : self._at + size]
        self._at += size
        return chunk

    def i16(self) -> int:
        value: int = _I16.unpack(self.take(_I16.size))[0]
        return value

    def i32(self) -> int:
        value: int = _I32.unpack(self.take(_I32.size))[0]
        return value

    def count(self) -> int:
        """An array's length; each element takes at least two bytes, so a count larger
        than what is left is malformed (and never allocates)."""
        n = self.i32()
        if n < 0 or n * 2 > len(self._data) - self._at:
            raise MalformedAssignmentError(f"array of {n} at byte {self._at - _I32.size}")
        return n
