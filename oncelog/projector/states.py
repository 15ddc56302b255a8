"""The states of the assigned partitions in memory, bounded, least recently used out first.

The projector folds from here: a state it folded is put back at once, committed or
not, so the next batch never waits for DuckDB. Only committed states may be evicted
(a miss reloads from DuckDB, which must then hold the latest version): the projector
drains its committer before :meth:`StateCache.evict`. A revoked partition's states are
dropped, since another member folds them from now on.

Two bounds: a count, and an idle time. A state unused for ``max_idle_s`` goes too, so
that the cache of a projector under a steady load stops growing at what that load keeps
busy, long before the count is reached. Neither changes a decision: an evicted state
is read back from DuckDB, the same version.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable
from typing import Final

from oncelog.schemas.models import ExecutionState

#: About 2 KB per state (docs/performance.md, "Today's figures"): ~400 MB.
DEFAULT_MAX_STATES = 200_000
#: Claims, heartbeats and completions of one attempt come within a lease or two.
DEFAULT_MAX_IDLE_S: Final = 300.0


class StateCache:
    """Operation id -> (partition, state, last used), in least-recently-used order.

    ``clock`` (monotonic seconds) is injectable so that tests need no sleeps.
    """

    def __init__(
        self,
        max_states: int = DEFAULT_MAX_STATES,
        max_idle_s: float = DEFAULT_MAX_IDLE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_states = max_states
        self.max_idle_s = max_idle_s
        self._clock = clock
        # A dict keeps insertion order: re-inserting on use makes it an LRU list.
        self._states: dict[str, tuple[int, ExecutionState, float]] = {}

    def __len__(self) -> int:
        return len(self._states)

    def get_many(self, operation_ids: Iterable[str]) -> dict[str, ExecutionState]:
        """The cached states among ``operation_ids``, each marked as just used."""
        states = self._states
        found: dict[str, ExecutionState] = {}
        now = self._clock()
        for op in operation_ids:
            entry = states.pop(op, None)
            if entry is not None:
                states[op] = (entry[0], entry[1], now)
                found[op] = entry[1]
        return found

    def put(self, partition: int, state: ExecutionState) -> None:
        """Remember ``state`` (the newest version of its operation) as just used."""
        op = state.operation_id
        self._states.pop(op, None)
        self._states[op] = (partition, state, self._clock())

    def over_limit(self) -> bool:
        """True when :meth:`evict` is due: over the count, or the oldest use too old."""
        states = self._states
        if len(states) > self.max_states:
            return True
        oldest = next(iter(states.values()), None)
        return oldest is not None and self._clock() - oldest[2] > self.max_idle_s

    def evict(self) -> int:
        """Drop the least recently used states down to 90 % of the bound, and those unused
        for 90 % of ``max_idle_s``; return how many.

        Every cached state must be committed (the caller drains first). The slack
        makes eviction, and the drain before it, rare.
        """
        states = self._states
        excess = len(states) - self.max_states * 9 // 10
        idle_before = self._clock() - self.max_idle_s * 0.9
        gone: list[str] = []
        # Last uses only grow along the order: the first entry kept ends the scan.
        for op, (_, _, used) in states.items():
            if len(gone) >= excess and used >= idle_before:
                break
            gone.append(op)
        for op in gone:
            del states[op]
        return len(gone)

    def drop_partitions(self, partitions: Collection[int]) -> None:
        """Forget every state of ``partitions`` (revoked)."""
        gone = set(partitions)
        self._states = {op: e for op, e in self._states.items() if e[0] not in gone}
