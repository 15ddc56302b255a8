"""When the projection's DuckDB file is checkpointed by time, beside DuckDB's log size.

Until a checkpoint, DuckDB keeps in memory every row its write-ahead log holds. Its own
trigger is the log's size (``ONCELOG_DUCKDB_CHECKPOINT_MB``), kept large because a
checkpoint costs more the larger the file; under a light load that size takes most of an
hour to fill, and the memory grows all along. A checkpoint at least every
``every_s`` seconds keeps it at what the load writes in that time; under a heavy load
the size comes first and this adds nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class WalSchedule:
    """Says when the next timed checkpoint is due (``clock``: monotonic seconds)."""

    def __init__(self, every_s: float | None, clock: Callable[[], float] = time.monotonic) -> None:
        self.every_s = every_s
        self._clock = clock
        self._last = clock()

    def due(self) -> bool:
        """True (and the schedule starts over) when ``every_s`` passed since the last."""
        if self.every_s is None:
            return False
        now = self._clock()
        if now - self._last < self.every_s:
            return False
        self._last = now
        return True

    def again(self) -> None:
        """Make the next :meth:`due` true (a due checkpoint that could not run)."""
        if self.every_s is not None:
            self._last = self._clock() - self.every_s
