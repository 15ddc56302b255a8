"""A held partition that is no longer fetched, told apart from one that is only busy.

After its leader moves, librdkafka can leave an assigned partition without fetching it
(its fetch state waiting on an offset validation that never completes; see
docs/reliability.md, "A partition that stops being fetched"). The group sees nothing
wrong: the projector holds the partition, polls, and never folds the requests waiting
there, so every caller on it times out. Every ``every_s`` the projector compares each
held partition's next offset to fold with its high watermark, read from the broker:
requests waiting and none folded for ``stall_s`` is a stall, and the projector replaces
its consumer (static membership: the group does not even rebalance).

Only the partition's own progress counts: a busy projector whose other partitions keep
it polling is still watched, and a lagging partition that folds anything is not stalled.
A folding thread that was itself held up (a long commit) fetched nothing meanwhile: a
look more than half the stall time after the one before starts every partition's wait
over.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Final

DEFAULT_EVERY_S: Final = 5.0
"""How often the high watermarks of the held partitions are read."""

DEFAULT_STALL_S: Final = 20.0
"""How long requests may wait on a held partition with none folded."""


class StallWatch:
    """Which held partition has requests waiting and folded none for ``stall_s``."""

    def __init__(
        self,
        every_s: float = DEFAULT_EVERY_S,
        stall_s: float = DEFAULT_STALL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.every_s = every_s
        self.stall_s = stall_s
        self._clock = clock
        self._looked_at = clock()
        self._last_look: float | None = None
        # partition -> (next offset to fold, when it was first seen waiting there)
        self._waiting: dict[int, tuple[int, float]] = {}

    def due(self) -> bool:
        """True once every ``every_s`` (and the period starts over)."""
        now = self._clock()
        if now - self._looked_at < self.every_s:
            return False
        self._looked_at = now
        return True

    def look(self, next_offsets: Mapping[int, int], highs: Mapping[int, int]) -> str | None:
        """Why the consumer must be replaced (a stalled partition), or None.

        ``next_offsets``: each held partition's next offset to fold; ``highs``: its high
        watermark now (missing or negative: unknown, never a stall).
        """
        now = self._clock()
        if self._last_look is None or now - self._last_look > self.stall_s / 2:
            self._waiting = {}  # the thread itself was held up: nobody fetched meanwhile
        self._last_look = now
        waiting: dict[int, tuple[int, float]] = {}
        stalled: str | None = None
        for partition, next_offset in sorted(next_offsets.items()):
            high = highs.get(partition, -1)
            if high <= next_offset:
                continue  # caught up, or the watermark is unknown
            seen = self._waiting.get(partition)
            if seen is None or seen[0] != next_offset:
                seen = (next_offset, now)  # waiting from now, or it moved since
            waiting[partition] = seen
            idle_s = now - seen[1]
            if stalled is None and idle_s >= self.stall_s:
                stalled = (
                    f"partition {partition} not fetched: {high - next_offset} requests "
                    f"waiting at offset {next_offset}, none folded for {idle_s:.0f}s"
                )
        self._waiting = {} if stalled is not None else waiting
        return stalled
