"""The states of the assigned partitions in memory, bounded, least recently used out first.

The projector folds from here: a state it folded is put back at once, committed or
not, so the next batch never waits for DuckDB. Only committed states may be evicted
(a miss reloads from DuckDB, which must then hold the latest version): the projector
drains its committer before :meth:`StateCache.evict`. A revoked partition's states are
dropped, since another member folds them from now on.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from oncelog.schemas.models import ExecutionState

#: About 2 KB per state (docs/performance.md, "Today's figures"): ~400 MB.
DEFAULT_MAX_STATES = 200_000


class StateCache:
    """Operation id -> (partition, state), in least-recently-used order."""

    def __init__(self, max_states: int = DEFAULT_MAX_STATES) -> None:
        self.max_states = max_states
        # A dict keeps insertion order: re-inserting on use makes it an LRU list.
        self._states: dict[str, tuple[int, ExecutionState]] = {}

    def __len__(self) -> int:
        return len(self._states)

    def get_many(self, operation_ids: Iterable[str]) -> dict[str, ExecutionState]:
        """The cached states among ``operation_ids``, each marked as just used."""
        states = self._states
        found: dict[str, ExecutionState] = {}
        for op in operation_ids:
            entry = states.pop(op, None)
            if entry is not None:
                states[op] = entry
                found[op] = entry[1]
        return found

    def put(self, partition: int, state: ExecutionState) -> None:
        """Remember ``state`` (the newest version of its operation) as just used."""
        op = state.operation_id
        self._states.pop(op, None)
        self._states[op] = (partition, state)

    def over_limit(self) -> bool:
        """True when :meth:`evict` is due."""
        return len(self._states) > self.max_states

    def evict(self) -> int:
        """Drop the least recently used states down to 90 % of the bound; return how many.

        Every cached state must be committed (the caller drains first). The slack
        makes eviction, and the drain before it, rare.
        """
        keep = self.max_states * 9 // 10
        excess = len(self._states) - keep
        if excess <= 0:
            return 0
        for op in list(self._states)[:excess]:
            del self._states[op]
        return excess

    def drop_partitions(self, partitions: Collection[int]) -> None:
        """Forget every state of ``partitions`` (revoked)."""
        gone = set(partitions)
        self._states = {op: e for op, e in self._states.items() if e[0] not in gone}
