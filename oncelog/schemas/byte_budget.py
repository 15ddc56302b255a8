"""Memos of encoded bytes bounded by the bytes they hold, not by their entry count.

An entry count bounds nothing when one value may be a 1 MiB error string or a
state carrying 2 MiB of params and result: the writer's memos count bytes. They
also start over after ``MAX_AGE_S``: a budget sized for the peak rate would take
a light load most of an hour to fill, its memory growing all along; an entry is
only worth keeping while the records that share it are written. Compiled by mypyc
(``oncelog._compiled``) with the writers that call it for every field they write.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from typing import Final, Generic, TypeVar

K = TypeVar("K", bound=Hashable)

ENTRY_OVERHEAD: Final = 120
"""Bytes counted per entry beyond its data: object headers and the dict slot."""

MAX_AGE_S: Final = 60.0
"""Seconds after which a memo starts over, however little it holds."""


def entry_bytes(data: bytes) -> int:
    """What one memo entry of ``data`` is counted as.

    Its bytes, about as much again for what it is kept by (a string key of the
    same length, or the tuple or state whose strings it encodes), and the overhead.
    """
    return 2 * len(data) + ENTRY_OVERHEAD


class BytesMemo(Generic[K]):
    """Encoded values by key, all forgotten at once when they would pass ``budget_bytes``
    or ``max_age_s`` after the last start (``clock``: monotonic seconds, injectable).

    Shared by threads: every dict call is atomic, and a lost update of the count
    only misjudges it by an entry until the next clear. A value larger than the
    whole budget is never kept.
    """

    def __init__(
        self,
        budget_bytes: int,
        max_age_s: float = MAX_AGE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.budget_bytes = budget_bytes
        self.max_age_s = max_age_s
        self._clock = clock
        self._started = clock()
        self._entries: dict[K, bytes] = {}
        self._bytes = 0

    @property
    def held_bytes(self) -> int:
        """The bytes counted for the entries held now."""
        return self._bytes

    def get(self, key: K) -> bytes | None:
        """The bytes remembered for ``key``, or ``None``."""
        return self._entries.get(key)

    def put(self, key: K, data: bytes) -> None:
        """Remember ``data`` for ``key``; start over first when the budget would overflow."""
        size = entry_bytes(data)
        now = self._clock()
        if self._bytes + size > self.budget_bytes or now - self._started > self.max_age_s:
            self._entries.clear()
            self._bytes, self._started = 0, now
            if size > self.budget_bytes:
                return
        self._entries[key] = data
        self._bytes += size
