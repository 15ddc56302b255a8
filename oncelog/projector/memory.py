"""What the projector remembers of its assigned partitions, and where it looks up the rest.

The folding thread takes a batch's states from here (:meth:`StateMemory.load`): from the
bounded :class:`~oncelog.projector.states.StateCache` (folded, maybe not yet committed),
else from DuckDB, but only for an operation id the store may hold (:mod:`.known_ids`, a
filter of fixed size that never misses one). Most claims are new operations: they need no
DuckDB lookup at all. :mod:`.assignment` tells it which partitions are held; the loop in
:mod:`.service` tells it what each batch folded.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from oncelog.identity.partitioner import partition_for
from oncelog.projector.known_ids import DEFAULT_BITS, KnownIds
from oncelog.projector.states import StateCache
from oncelog.projector.store import Store, StoreReader
from oncelog.schemas.models import ExecutionSnapshot, ExecutionState


class StateMemory:
    """The assigned partitions' states in memory, and the operation ids DuckDB holds."""

    def __init__(
        self, store: Store, reader: StoreReader, max_states: int, known_bits: int = DEFAULT_BITS
    ) -> None:
        self._store = store
        self._reader = reader
        self.states = StateCache(max_states)
        #: Partitions of the requests topic: a loaded state's own partition. Known once
        #: the projector started (it is the consumer that counts them).
        self.partitions = 0
        # Every operation id the store holds for the assigned partitions (and, rarely,
        # an id it does not hold: a lookup that finds nothing).
        self._known_bits = known_bits
        self._known = KnownIds(known_bits)

    def load(self, operation_ids: Collection[str]) -> dict[str, ExecutionState]:
        """States from memory (folded, maybe not yet committed), known others from DuckDB."""
        found = self.states.get_many(operation_ids)
        known = self._known
        missing = [op for op in operation_ids if op not in found and op in known]
        if missing:
            loaded = self._reader.load_states(missing)
            for state in loaded.values():
                self.states.put(partition_for(state.channel_id, self.partitions), state)
            found.update(loaded)
        return found

    def remember(self, snapshots: Iterable[ExecutionSnapshot]) -> None:
        """Keep the states a batch folded: the next batch folds from them, committed or not."""
        for snapshot in snapshots:
            self.states.put(snapshot.source_partition, snapshot.state)
            self._known.add(snapshot.state.operation_id)

    def assigned(self, partitions: Collection[int]) -> None:
        """Newly assigned ``partitions``: learn the operation ids DuckDB holds for them."""
        self._known.update(self._store.operation_ids(partitions))

    def released(self, partitions: Collection[int], held: Collection[int]) -> None:
        """Forget the states of ``partitions``; the known ids are those of ``held`` now."""
        self.states.drop_partitions(partitions)
        self._known = KnownIds(self._known_bits)
        self._known.update(self._store.operation_ids(held))
