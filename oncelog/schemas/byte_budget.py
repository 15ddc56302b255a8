"""Memos of encoded bytes bounded by the bytes they hold, not by their entry count.

An entry count bounds nothing when one value may be a 1 MiB error string or a
state carrying 2 MiB of params and result: the writer's memos count bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Final, Generic, TypeVar

K = TypeVar("K", bound=Hashable)

ENTRY_OVERHEAD: Final = 120
"""Bytes counted per entry beyond its data: object headers and the dict slot."""


def entry_bytes(data: bytes) -> int:
    """What one memo entry of ``data`` is counted as.

    Its bytes, about as much again for what it is kept by (a string key of the
    same length, or the tuple or state whose strings it encodes), and the overhead.
    """
    return 2 * len(data) + ENTRY_OVERHEAD


class BytesMemo(Generic[K]):
    """Encoded values by key, all forgotten at once when they would pass ``budget_bytes``.

    Shared by threads: every dict call is atomic, and a lost update of the count
    only misjudges it by an entry until the next clear. A value larger than the
    whole budget is never kept.
    """

    def __init__(self, budget_bytes: int) -> None:
        self.budget_bytes = budget_bytes
        self._entries: dict[K, bytes] = {}
        self._bytes = 0
        # The hot path is one dict lookup; cleared in place, so this stays bound.
        self.get: Callable[[K], bytes | None] = self._entries.get

    @property
    def held_bytes(self) -> int:
        """The bytes counted for the entries held now."""
        return self._bytes

    def put(self, key: K, data: bytes) -> None:
        """Remember ``data`` for ``key``; start over first when the budget would overflow."""
        size = entry_bytes(data)
        if self._bytes + size > self.budget_bytes:
            self._entries.clear()
            self._bytes = 0
            if size > self.budget_bytes:
                return
        self._entries[key] = data
        self._bytes += size
