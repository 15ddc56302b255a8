"""The projector's states in memory: what it folded, and a DuckDB lookup only for known ids."""

from __future__ import annotations

from pathlib import Path

from oncelog.identity.partitioner import partition_for
from oncelog.projector.memory import StateMemory
from oncelog.projector.states import StateCache
from oncelog.projector.store import Store
from tests.projector.fold_factories import Op
from tests.projector.store_factories import feed, fold_to_batch

PARTITIONS = 3


def _memory(store: Store) -> StateMemory:
    memory = StateMemory(store, store.reader(), max_states=100)
    memory.partitions = PARTITIONS
    return memory


def test_a_committed_operation_is_loaded_only_once_its_partition_is_assigned(
    tmp_path: Path,
) -> None:
    op = Op()
    p = partition_for(op.channel_id, PARTITIONS)
    with Store(tmp_path / "p.duckdb") as store:
        feed(store, p, [(op.claim("t1"), 1_000)])
        memory = _memory(store)
        # Not known yet: taken for a new operation, as most claims are, with no lookup.
        assert memory.load([op.operation_id]) == {}
        memory.assigned([p])
        loaded = memory.load([op.operation_id])
        assert loaded[op.operation_id] == store.load_states([op.operation_id])[op.operation_id]
        # Kept in memory: a release of its partition (under its own partition) drops it.
        memory.released([p], held=[])
        assert len(memory.states) == 0
        assert memory.load([op.operation_id]) == {}


def test_a_folded_state_is_served_from_memory_before_it_is_committed(tmp_path: Path) -> None:
    op = Op()
    p = partition_for(op.channel_id, PARTITIONS)
    with Store(tmp_path / "p.duckdb") as store:
        batch = fold_to_batch(store, p, [(op.claim("t1"), 1_000)])  # folded, not committed
        memory = _memory(store)
        memory.remember(batch.snapshots)
        assert memory.load([op.operation_id]) == {op.operation_id: batch.snapshots[0].state}
        # Another partition's release keeps it.
        memory.released([(p + 1) % PARTITIONS], held=[p])
        assert memory.load([op.operation_id]) == {op.operation_id: batch.snapshots[0].state}


def test_a_filter_that_answers_maybe_for_every_id_loads_the_same_states(tmp_path: Path) -> None:
    stored = [Op(key_name=f"stored-{i}") for i in range(20)]
    new = Op(key_name="new")
    with Store(tmp_path / "p.duckdb") as store:
        for op in stored:
            feed(store, partition_for(op.channel_id, PARTITIONS), [(op.claim("t1"), 1_000)])
        exact = _memory(store)
        # 8 bits, 7 probes each: twenty stored ids set them all.
        saturated = StateMemory(store, store.reader(), max_states=100, known_bits=8)
        saturated.partitions = PARTITIONS
        for memory in (exact, saturated):
            memory.assigned(range(PARTITIONS))
        assert new.operation_id in saturated._known  # a false "maybe": a lookup, no state
        ids = [op.operation_id for op in [*stored, new]]
        assert saturated.load(ids) == exact.load(ids) == store.load_states(ids)
        assert len(store.load_states(ids)) == len(stored)


def test_a_state_evicted_for_idleness_is_read_back_the_same(tmp_path: Path) -> None:
    op = Op(key_name="idle")
    p = partition_for(op.channel_id, PARTITIONS)
    now = [0.0]
    with Store(tmp_path / "p.duckdb") as store:
        memory = _memory(store)
        memory.states = StateCache(max_states=100, max_idle_s=60.0, clock=lambda: now[0])
        batch = feed(store, p, [(op.claim("t1"), 1_000)])  # folded and committed
        memory.remember(batch.snapshots)
        now[0] += 61
        assert memory.states.over_limit()
        assert memory.states.evict() == 1
        assert len(memory.states) == 0
        assert memory.load([op.operation_id]) == {op.operation_id: batch.snapshots[0].state}
