"""Refold the requests log into an empty projection in bulk.

The live projector builds objects per record (``AuditEntry``, stamped
decisions, snapshots) and publishes each decision. Over a whole log that costs
many times the fold. This path runs the same referee step per record
(:func:`oncelog.referee.judge.admit` and :func:`~oncelog.referee.judge.judge`), but
turns each decision straight into the store's row tuples (:mod:`oncelog.projector.rows`)
and writes each partition in a few large transactions of Arrow-registered inserts
(history is append-only, as in the live store); :mod:`oncelog.projector.refold_pool`
runs the same :class:`PartitionRefold` in worker processes for a large log. Each
transaction also stores the partition's position, so the position always covers
exactly the rows written (the rule of the live path).
``tests/integration/test_bulk_rebuild.py`` compares every table with the live
projection's: the step is shared, the row writers are not.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Final, Protocol

import duckdb
from confluent_kafka import OFFSET_BEGINNING, Message

from oncelog.errors import StoreError
from oncelog.kafka.reader import read_to_end, where
from oncelog.projector.rows import audit_row, execution_row, history_row
from oncelog.projector.state_blob import encode_state
from oncelog.projector.tables import (
    DEAD_LETTERS,
    EXECUTIONS,
    HISTORY,
    POSITIONS,
    REQUESTS,
    arrow_table,
    column_list,
)
from oncelog.referee.fold import PartitionClock
from oncelog.referee.judge import Refusal, admit, judge
from oncelog.schemas.models import Decision, ExecutionSnapshot, ExecutionState

Progress = Callable[[int, int], None]  # (partition, records done in it)

# Records per transaction. Large, because every transaction pays a fixed cost in
# index maintenance and commit; bounded, because the rows wait in memory (about
# 1 KB per record with its state blob).
Head = tuple[Iterable[Message], int]
"""A partition's records before its log's tail (from an archive) and the offset the tail
starts at."""


CHUNK: Final = 250_000
# How often the progress callback hears about a partition (records).
_TICK: Final = 10_000


def _statements() -> tuple[tuple[str, str], ...]:
    """(registered table, statement) in the order one transaction runs them."""
    return (
        (
            "_bulk_history",
            f"INSERT INTO history ({column_list(HISTORY)}) SELECT * FROM _bulk_history",
        ),
        # Versions only grow during a refold: the chunk's last version replaces the row.
        (
            "_bulk_executions",
            f"INSERT OR REPLACE INTO executions ({column_list(EXECUTIONS)}) "
            "SELECT * FROM _bulk_executions",
        ),
        (
            "_bulk_audit",
            f"INSERT INTO requests ({column_list(REQUESTS)}) SELECT * FROM _bulk_audit",
        ),
        (
            "_bulk_dead",
            f"INSERT INTO dead_letters ({column_list(DEAD_LETTERS)}) SELECT * FROM _bulk_dead",
        ),
        (
            "_bulk_positions",
            f"INSERT OR REPLACE INTO positions ({column_list(POSITIONS)}) "
            "SELECT * FROM _bulk_positions",
        ),
    )


_STATEMENTS: Final = _statements()


class PartitionRefold:
    """One partition's refold: in-memory states and clock, rows waiting for the next write."""

    def __init__(
        self, topic: str, partition: int, partitions: int, max_clock_step_ms: int = 0
    ) -> None:
        self._topic = topic
        self._max_step = max_clock_step_ms
        self._p = self.partition = partition
        self._partitions = partitions
        self.states: dict[str, ExecutionState] = {}
        self.clock = PartitionClock()
        # An empty partition still gets its position row (offset 0), as a live projector
        # that was assigned it writes one.
        self.next_offset = 0
        self._written = False
        self._reset()

    def _reset(self) -> None:
        self.pending = 0
        self._audit: list[tuple[Any, ...]] = []
        self._dead: list[tuple[Any, ...]] = []
        self._versions: list[ExecutionSnapshot] = []
        self._latest: dict[str, int] = {}  # op -> index of its last version in the chunk

    def add(self, msg: Message) -> None:
        """Admit and judge one record of this partition (log order)."""
        p, offset = where(msg)
        self.next_offset = offset + 1
        self.pending += 1
        value, ts = msg.value() or b"", msg.timestamp()[1]
        verdict = admit(
            value, msg.key(), partition=p, offset=offset, ts_ms=ts, partitions=self._partitions
        )
        if isinstance(verdict, Refusal):
            self._reject(offset, ts, verdict)
            return
        op = verdict.operation_id
        before = self.states.get(op)
        self.clock, after, decision = judge(
            before,
            verdict,
            self.clock,
            ts_ms=ts,
            partition=p,
            offset=offset,
            max_clock_step_ms=self._max_step,
        )
        if after is not None and after is not before:
            self.states[op] = after
        self._audit.append(audit_row(p, offset, decision.log_time_ms, verdict, decision))
        if decision.changed and after is not None:
            self._add_version(op, after, offset, decision)

    def _add_version(self, op: str, state: ExecutionState, offset: int, decision: Decision) -> None:
        self._latest[op] = len(self._versions)
        # What the live projector publishes on the executions topic for this version.
        snap = ExecutionSnapshot(
            state, self._p, offset, decision.request_id, decision.outcome, decision.log_time_ms
        )
        self._versions.append(snap)

    def _reject(self, offset: int, ts: int, refusal: Refusal) -> None:
        """A dead letter, plus an audited answer when the record decoded (its sender waits)."""
        exc = refusal.error
        self._dead.append((self._topic, self._p, offset, ts, exc.code, str(exc), refusal.length))
        if refusal.request is not None and refusal.answer is not None:
            self._audit.append(audit_row(self._p, offset, ts, refusal.request, refusal.answer))

    def take(self) -> dict[str, Any] | None:
        """The pending rows and the position as Arrow tables (None: nothing new); resets."""
        if self._written and not self.pending:
            return None
        tables = self._tables()
        self._written = True
        self._reset()
        return tables

    def _tables(self) -> dict[str, Any]:
        p = self._p
        history = [history_row(v, encode_state(v.state, once=True)) for v in self._versions]
        executions = [execution_row(self._versions[i]) for i in self._latest.values()]
        return {
            "_bulk_history": arrow_table(HISTORY, history),
            "_bulk_executions": arrow_table(EXECUTIONS, executions),
            "_bulk_audit": arrow_table(REQUESTS, self._audit),
            "_bulk_dead": arrow_table(DEAD_LETTERS, self._dead),
            "_bulk_positions": arrow_table(POSITIONS, [(p, self.next_offset, self.clock.last_ms)]),
        }


# --- writing ---------------------------------------------------------------------


def write_chunk(con: duckdb.DuckDBPyConnection, partition: int, tables: Mapping[str, Any]) -> None:
    """Write one chunk's tables and its position in ONE transaction."""
    try:
        con.execute("BEGIN TRANSACTION")
        for name, statement in _STATEMENTS:
            if tables[name].num_rows:
                con.register(name, tables[name])
                con.execute(statement)
                con.unregister(name)
        con.execute("COMMIT")
    except duckdb.Error as exc:
        con.execute("ROLLBACK")
        raise StoreError(f"bulk rebuild of partition {partition} failed: {exc}") from exc


class ChunkWriter:
    """Writes chunks on a thread of its own while the caller folds the next one.

    DuckDB runs a statement without the GIL, so on two cores the inserts of one
    chunk overlap the fold of the next. One chunk at a time: a new one waits for
    the previous (which bounds memory), and the chunks of a partition commit in
    order, each with its position.
    """

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bulk-writer")
        self._pending: Future[None] | None = None

    def submit(self, partition: int, tables: Mapping[str, Any]) -> None:
        """Queue a chunk after waiting for the previous one (its error is raised here)."""
        self.wait()
        self._pending = self._pool.submit(write_chunk, self._con, partition, tables)

    def wait(self) -> None:
        """Wait until the queued chunk is committed; raise its error."""
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def close(self) -> None:
        """Wait for the last chunk, then stop the thread."""
        try:
            self.wait()
        finally:
            self._pool.shutdown()


# --- driving one partition -----------------------------------------------------------


class ChunkSink(Protocol):
    """Where a refold hands its chunks: :class:`ChunkWriter` here, a worker's IPC files there."""

    def submit(self, partition: int, tables: Mapping[str, Any]) -> None:
        """Take one chunk's tables (its rows and the partition's position)."""


def _hand_over(refold: PartitionRefold, writer: ChunkSink) -> None:
    tables = refold.take()
    if tables is not None:
        writer.submit(refold.partition, tables)


def refold_partition(
    kafka: Mapping[str, Any],
    topic: str,
    partition: int,
    partitions: int,
    writer: ChunkSink,
    *,
    progress: Progress | None = None,
    chunk: int | None = None,
    max_clock_step_ms: int = 0,
    head: Head | None = None,
) -> int:
    """Refold ``topic[partition]`` from offset 0 to its high watermark through ``writer``,
    in chunks of ``chunk`` records (default :data:`CHUNK`), judged with the ledger's
    ``max_clock_step_ms`` as the live projector judges. With a ``head`` (the records
    before the log's tail, read from an archive), those first, then the log from the
    head's end."""
    chunk = CHUNK if chunk is None else chunk
    refold = PartitionRefold(topic, partition, partitions, max_clock_step_ms)
    total = 0
    before, start = head if head is not None else ((), OFFSET_BEGINNING)
    tail = read_to_end(kafka, topic, partition, start, timeout_s=3600, batch=10_000)
    for msg in itertools.chain(before, tail):
        refold.add(msg)
        total += 1
        if progress is not None and total % _TICK == 0:
            progress(partition, _TICK)
        if refold.pending >= chunk:
            _hand_over(refold, writer)
    _hand_over(refold, writer)
    if progress is not None and total % _TICK:
        progress(partition, total % _TICK)
    return total
