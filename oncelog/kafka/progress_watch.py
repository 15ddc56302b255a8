"""Work that was there a while ago and is still not done: when a client is stuck.

Two of librdkafka's clients can stop making progress on one partition while the cluster
is healthy again, and a new client gets on at once (docs/reliability.md, "A publisher
that stops delivering" and "A client that stops delivering, or reading"):

- an idempotent producer, after the links between brokers heal: it sends nothing more to
  a partition until ``message.timeout.ms`` fails each record held for it;
- a consumer, after a partition's leader moved: it holds the partition and fetches
  nothing more from it.

Both are counts that chase a target: records settled (acknowledged or failed) against
records sent, the next offset read against the high watermark. The watch is told both
now and then and remembers when each target was seen; it says "stalled" once work that
was already there ``stall_s`` ago is still not done. Nothing left to do starts the wait
over. Only counts are compared: on one partition (a reader's, or a producer that writes
to one) that is exact; a producer's stuck partition among others that deliver shows only
once the others' deliveries no longer make up for it. Pure (an injectable clock, no
I/O), so it is tested without a broker.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from typing import Final

DEFAULT_STALL_S: Final = 30.0
"""How long work may wait undone before the client is replaced."""


class ProgressWatch:
    """Whether work that was there ``stall_s`` ago is still not done."""

    def __init__(
        self, stall_s: float = DEFAULT_STALL_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.stall_s = stall_s
        self._clock = clock
        #: (when, target then), oldest first, each target higher than the one before.
        self._marks: collections.deque[tuple[float, int]] = collections.deque()

    def stalled(self, done: int, target: int) -> bool:
        """True once ``done`` has not reached a ``target`` seen ``stall_s`` ago or earlier;
        the wait then starts over.

        ``done`` and ``target`` only grow: records settled and sent, or the next offset
        read and the high watermark.
        """
        now = self._clock()
        marks = self._marks
        while marks and marks[0][1] <= done:
            marks.popleft()  # that work is done
        if done >= target:
            marks.clear()
            return False
        if marks and now - marks[0][0] >= self.stall_s:
            marks.clear()
            return True
        if not marks or marks[-1][1] < target:
            marks.append((now, target))
        return False
