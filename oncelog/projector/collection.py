"""When a serving projector runs full cycle collections.

A projector keeps the decided states of its partitions in memory (up to
``max_states``): NamedTuples of strings, numbers and tuples, long-lived and
without cycles. CPython's collector rescans every object that survived two
collections in each full (generation 2) collection, and starts one whenever
the survivors grew by a quarter, so a growing cache is rescanned again and
again while nothing is folded: under load, those collections stall the main
thread for long pauses and find almost nothing (docs/performance.md).

So a serving process keeps the automatic young collections (they only see new
objects, and catch the cycles a batch makes) and runs the full ones itself:
when the projector is idle (a poll brought nothing) and ``idle_interval_s``
has passed since the last, or after ``max_interval_s`` under constant load.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final

#: A generation-2 threshold the collector never reaches by itself (C int range).
NEVER: Final = 2**31 - 1
IDLE_INTERVAL_S: Final = 60.0
MAX_INTERVAL_S: Final = 600.0


class FullCollections:
    """Decides, batch by batch, when to run a full collection (injectable clock)."""

    def __init__(
        self,
        *,
        idle_interval_s: float = IDLE_INTERVAL_S,
        max_interval_s: float = MAX_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        collect: Callable[[int], object] = gc.collect,
    ) -> None:
        self._idle_interval_s = idle_interval_s
        self._max_interval_s = max_interval_s
        self._clock = clock
        self._collect = collect
        self._last = clock()
        self.runs = 0

    def tick(self, *, idle: bool) -> bool:
        """After a batch (``idle``: it was empty): run a full collection if due; True if run."""
        since = self._clock() - self._last
        if since < self._idle_interval_s or (not idle and since < self._max_interval_s):
            return False
        self._collect(2)
        self._last = self._clock()
        self.runs += 1
        return True


@contextmanager
def full_collections_by_schedule(schedule: FullCollections) -> Iterator[FullCollections]:
    """Stop automatic full collections for the block (``schedule.tick`` runs them)."""
    young, middle, full = gc.get_threshold()
    gc.set_threshold(young, middle, NEVER)
    try:
        yield schedule
    finally:
        gc.set_threshold(young, middle, full)
