"""Fold requests into a :class:`Batch` the way the projector will, for the store tests."""

from __future__ import annotations

import duckdb

from oncelog.projector.store import AuditEntry, Batch, DeadLetter, Position, Store
from oncelog.referee.fold import PartitionClock, snapshot_of
from oncelog.referee.judge import judge
from oncelog.schemas.models import Request


def fold_to_batch(
    store: Store,
    partition: int,
    records: list[tuple[Request, int]],
    dead_letters: list[DeadLetter] | None = None,
) -> Batch:
    """Fold ``(request, broker_ts)`` at the stored position into an uncommitted batch."""
    position = store.positions().get(partition, Position(0, None))
    states = dict(store.load_states({request.operation_id for request, _ in records}))
    clock = PartitionClock(position.clock_ms)
    audit: list[AuditEntry] = []
    snapshots = []
    for i, (request, ts_ms) in enumerate(records):
        offset = position.next_offset + i
        op = request.operation_id
        clock, state, decision = judge(
            states.get(op), request, clock, ts_ms=ts_ms, partition=partition, offset=offset
        )
        if state is not None:
            states[op] = state
        audit.append(AuditEntry(partition, offset, decision.log_time_ms, request, decision))
        if decision.changed:
            snapshots.append(snapshot_of(decision, partition, offset))
    end = Position(position.next_offset + len(records), clock.last_ms)
    return Batch(audit, snapshots, dead_letters or [], {partition: end})


def feed(
    store: Store,
    partition: int,
    records: list[tuple[Request, int]],
    dead_letters: list[DeadLetter] | None = None,
) -> Batch:
    """Fold and commit one batch; return it."""
    batch = fold_to_batch(store, partition, records, dead_letters)
    store.commit(batch)
    return batch


def key_history(con: duckdb.DuckDBPyConnection) -> None:
    """Give ``history`` the primary key that files written before the key-less layout have.

    ``con`` is a DuckDB connection to the file, with the ``history_operation`` index
    dropped (DuckDB refuses to drop a table an index depends on); the caller creates it again.
    """
    con.execute("CREATE TABLE keyed AS SELECT * FROM history LIMIT 0")
    con.execute("ALTER TABLE keyed ADD PRIMARY KEY (operation_id, version)")
    con.execute("INSERT INTO keyed SELECT * FROM history")
    con.execute("DROP TABLE history")
    con.execute("ALTER TABLE keyed RENAME TO history")
