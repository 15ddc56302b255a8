"""The DuckDB projection of the ledger: one writer process owns the file.

Per Kafka poll batch the projector calls :meth:`Store.load_states` (one query),
folds in memory, publishes, then :meth:`Store.commit` writes everything in one
DuckDB transaction. Every write goes through registered Arrow tables and
set-based ``INSERT … SELECT`` statements: DuckDB is orders of magnitude slower
with per-row statements or ``executemany``.

Tables (``partition``/``offset`` are positions in the requests topic):

``executions``
    The current version of each operation, one row per ``operation_id`` (primary
    key), narrow: partition, channel_id, key_name, status, version, epoch,
    worker_id, effect, result, result_hash, expires_at_ms, source_offset,
    log_time_ms. Everything else of that version (token_fp, the claim token's
    fingerprint, never the token, and ``state``, the full state as an Avro blob
    that :meth:`Store.load_states` decodes for an exact reload) is its
    ``history`` row.
``history``
    One row per state version (operation_id, version), with an ART index on
    ``operation_id`` because point lookups by operation are the hot query.
    ``valid_from_offset`` is the source offset of the request that made the
    version. History is append-only: a version's end (the next version's
    ``valid_from_offset``) is derived when queried, so a commit never updates
    an old row. (Files written before kept a ``valid_to_offset`` column; it is
    no longer written or read.)
``requests``
    The audit: one row per folded request, keyed by (partition, offset), indexed
    by ``channel_id`` for timelines; it records the outcome and the
    ``duplicate_effect_suspected`` flag.
``positions``
    Per partition of the requests topic: the next offset to consume and the
    partition clock (last clamped log time), written with the data they cover.
``dead_letters``
    Undecodable or impossible records, keyed by (topic, partition, offset).

Idempotency: a crashed projector refolds and may commit the same batch again.
A commit inserts history rows only at or after the stored position of their
partition (the position is written in the same transaction, so every row below
it is in the file already): no key to check per row. Audit and dead letters are
keyed and written with ``INSERT OR IGNORE``; the current row and the position
only move forward (an upsert guarded by ``version``/``next_offset``), so
re-committing an old batch is a no-op rather than a regression.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import duckdb

from oncelog.errors import StoreError
from oncelog.projector.migrate import migrate
from oncelog.projector.rows import audit_row, execution_row, history_row
from oncelog.projector.state_blob import decode_state, encode_state
from oncelog.projector.store_file import Config, make_folder, open_file, store_failure
from oncelog.projector.tables import (
    DEAD_LETTERS,
    EXECUTIONS,
    HISTORY,
    POSITIONS,
    REQUESTS,
    SCHEMA_DDL,
    arrow_table,
    column_list,
    upsert_sets,
)
from oncelog.projector.wal_schedule import WalSchedule
from oncelog.schemas.models import (
    Decision,
    ExecutionSnapshot,
    ExecutionState,
    Request,
)


@dataclass(frozen=True, slots=True)
class Position:
    """Where the projector stands on one partition of the requests topic."""

    next_offset: int
    """The next offset to consume."""
    clock_ms: int | None
    """``PartitionClock.last_ms`` after the last folded record."""


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One folded request (every request, changed or not) and its decision."""

    partition: int
    offset: int
    log_time_ms: int
    """The clamped log time the fold used."""
    request: Request
    decision: Decision


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A record that could not be decoded or is impossible."""

    topic: str
    partition: int
    offset: int
    log_time_ms: int
    code: str
    """The ``LedgerError`` code, e.g. ``"codec_error"``."""
    message: str
    raw_length: int


@dataclass(frozen=True, slots=True)
class Batch:
    """Everything one poll batch writes, in one transaction."""

    audit: list[AuditEntry]
    snapshots: list[ExecutionSnapshot]
    """In log order; several versions of one operation are possible."""
    dead_letters: list[DeadLetter]
    positions: dict[int, Position]


# --- rows out of the fold's records -------------------------------------------------


def _audit(e: AuditEntry) -> tuple[Any, ...]:
    return audit_row(e.partition, e.offset, e.log_time_ms, e.request, e.decision)


def _dead_letter_row(d: DeadLetter) -> tuple[Any, ...]:
    return (d.topic, d.partition, d.offset, d.log_time_ms, d.code, d.message, d.raw_length)


@dataclass(frozen=True, slots=True)
class _VersionRows:
    """The Arrow tables one list of snapshots turns into."""

    history: Any
    executions: Any


def _version_rows(snapshots: Sequence[ExecutionSnapshot]) -> _VersionRows:
    """One history row per version (append-only) and the last row per operation."""
    history: list[tuple[Any, ...]] = []
    last: dict[str, tuple[Any, ...]] = {}
    for snap in snapshots:
        history.append(history_row(snap, encode_state(snap.state)))
        last[snap.state.operation_id] = execution_row(snap)
    return _VersionRows(
        history=arrow_table(HISTORY, history),
        executions=arrow_table(EXECUTIONS, list(last.values())),
    )


def _positions_table(positions: dict[int, Position]) -> Any:
    rows = [(p, pos.next_offset, pos.clock_ms) for p, pos in sorted(positions.items())]
    return arrow_table(POSITIONS, rows)


# --- statements --------------------------------------------------------------------

_INSERT_HISTORY: Final = (
    f"INSERT INTO history ({column_list(HISTORY)}) SELECT b.* FROM _b_history b "
    "LEFT JOIN positions p ON p.partition = b.partition "
    "WHERE p.next_offset IS NULL OR b.valid_from_offset >= p.next_offset"
)
# A file written before history lost its key keeps it; there a row already in the file
# (say, past a position an older restore set backwards) is skipped, not a violation.
_INSERT_HISTORY_KEYED: Final = _INSERT_HISTORY.replace("INSERT INTO", "INSERT OR IGNORE INTO", 1)
# A restore adds the versions the file lacks, whatever the position says.
_RESTORE_HISTORY: Final = (
    f"INSERT INTO history ({column_list(HISTORY)}) SELECT * FROM _b_history b "
    "WHERE NOT EXISTS (SELECT 1 FROM history h "
    "WHERE h.operation_id = b.operation_id AND h.version = b.version)"
)
_UPSERT_EXECUTIONS: Final = (
    f"INSERT INTO executions ({column_list(EXECUTIONS)}) SELECT * FROM _b_executions "
    f"ON CONFLICT (operation_id) DO UPDATE SET {upsert_sets(EXECUTIONS, 'operation_id')} "
    "WHERE excluded.version >= executions.version"
)
_INSERT_AUDIT: Final = (
    f"INSERT OR IGNORE INTO requests ({column_list(REQUESTS)}) SELECT * FROM _b_audit"
)
_INSERT_DEAD: Final = (
    f"INSERT OR IGNORE INTO dead_letters ({column_list(DEAD_LETTERS)}) SELECT * FROM _b_dead"
)
_ADVANCE_POSITIONS: Final = (
    f"INSERT INTO positions ({column_list(POSITIONS)}) SELECT * FROM _b_positions "
    "ON CONFLICT (partition) DO UPDATE SET next_offset = excluded.next_offset, "
    "clock_ms = excluded.clock_ms WHERE excluded.next_offset >= positions.next_offset"
)
_SET_POSITIONS: Final = (
    f"INSERT OR REPLACE INTO positions ({column_list(POSITIONS)}) SELECT * FROM _b_positions"
)


_INLINE_IDS = 64
# Each side through its index (a MATERIALIZED CTE keeps the bare IN filter that DuckDB
# answers from an ART index), then joined on the handful of rows found.
_CURRENT_STATES: Final = """
WITH c AS MATERIALIZED (
  SELECT operation_id, version FROM executions WHERE operation_id IN ({marks})
), v AS MATERIALIZED (
  SELECT operation_id, version, state FROM history WHERE operation_id IN ({marks})
)
SELECT v.operation_id, v.state FROM v JOIN c USING (operation_id, version)
"""


class StoreReader:
    """The read side of the projection over one DuckDB connection (or cursor)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: Path) -> None:
        self._con = con
        self.path = path

    def _fetch(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self._con.execute(sql, list(params)).fetchall()
        except duckdb.Error as exc:
            raise StoreError(f"query failed on {self.path}: {exc}") from exc

    def positions(self) -> dict[int, Position]:
        """The stored position of every partition seen so far."""
        rows = self._fetch("SELECT partition, next_offset, clock_ms FROM positions")
        return {p: Position(next_offset, clock) for p, next_offset, clock in rows}

    def load_states(self, operation_ids: Collection[str]) -> dict[str, ExecutionState]:
        """The exact current states of these operations (absent ones are left out).

        The current version from ``executions``, its state blob from ``history``, in
        queries of up to 64 ids: a short IN list is answered from the indexes, where
        a join with a registered table of ids scans the whole history.
        """
        ids = list(operation_ids)
        states: dict[str, ExecutionState] = {}
        for start in range(0, len(ids), _INLINE_IDS):
            chunk = ids[start : start + _INLINE_IDS]
            marks = ", ".join("?" * len(chunk))
            rows = self._fetch(_CURRENT_STATES.format(marks=marks), chunk + chunk)
            states.update((op, decode_state(blob)) for op, blob in rows)
        return states

    def operation_ids(self, partitions: Collection[int]) -> set[str]:
        """Every operation id stored for these partitions."""
        if not partitions:
            return set()
        marks = ", ".join("?" * len(partitions))
        sql = f"SELECT operation_id FROM executions WHERE partition IN ({marks})"
        return {op for (op,) in self._fetch(sql, list(partitions))}

    def current_states(self, partition: int | None = None) -> list[ExecutionState]:
        """Every current state (of one partition, or all), ordered by operation_id."""
        where, params = ("", []) if partition is None else ("WHERE e.partition = ?", [partition])
        rows = self._fetch(
            "SELECT h.state FROM executions e JOIN history h "
            f"ON h.operation_id = e.operation_id AND h.version = e.version {where} "
            "ORDER BY e.operation_id",
            params,
        )
        return [decode_state(blob) for (blob,) in rows]

    def expiry_candidates(self, now_ms: int, limit: int = 1000) -> list[tuple[int, str, str, str]]:
        """``(partition, operation_id, channel_id, key_name)`` of COMPLETED rows due by ``now_ms``.

        Oldest expiry first, so a bounded sweep makes progress on the backlog.
        """
        rows = self._fetch(
            "SELECT partition, operation_id, channel_id, key_name FROM executions "
            "WHERE status = 'COMPLETED' AND expires_at_ms <= ? "
            "ORDER BY expires_at_ms, operation_id LIMIT ?",
            [now_ms, limit],
        )
        return [(p, op, ch, key) for p, op, ch, key in rows]


class Store:
    """The projection in one DuckDB file; only one process may open it for writing.

    The connection is not shared across threads: other threads of the same
    process query through :meth:`cursor`, which DuckDB isolates with MVCC.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        read_only: bool = False,
        threads: int | None = None,
        checkpoint_mb: int | None = None,
        memory_limit_mb: int | None = None,
        checkpoint_every_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        after_commit: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
    ) -> None:
        """Open (or create) the file; a writable store creates the schema if missing.

        ``threads`` bounds DuckDB's worker threads (None: its default, one per core);
        ``checkpoint_mb`` is the write-ahead log size that triggers a checkpoint
        (None: DuckDB's default, 16 MB); ``memory_limit_mb`` is DuckDB's memory limit
        (None: its default, 80 % of the machine's memory); ``checkpoint_every_s``
        checkpoints after a commit when that long passed since the last (None: never by
        time; ``clock`` in monotonic seconds, injectable). ``after_commit`` is called with
        the file's connection after each commit, in the committing thread (the file's one
        writer): ``serve``'s prune of the history's window.
        """
        self.path = Path(path)
        self._after_commit = after_commit
        self._timed_checkpoints = WalSchedule(checkpoint_every_s, clock)
        self.read_only = read_only
        config: Config = {}
        if threads is not None:
            config["threads"] = threads
        if checkpoint_mb is not None:
            config["checkpoint_threshold"] = f"{checkpoint_mb}MiB"
        if memory_limit_mb is not None:
            config["memory_limit"] = f"{memory_limit_mb}MiB"
        if not read_only:
            make_folder(self.path)
        try:
            self._con = open_file(self.path, read_only=read_only, config=config)
            if not read_only:
                migrate(self._con)  # a file of an older version, before the DDL
                for ddl in SCHEMA_DDL:
                    self._con.execute(ddl)
            self._insert_history = (
                _INSERT_HISTORY_KEYED if _history_is_keyed(self._con) else _INSERT_HISTORY
            )
        except duckdb.Error as exc:
            raise store_failure("opening", self.path, exc) from exc
        self._reads = StoreReader(self._con, self.path)

    def close(self) -> None:
        """Close the connection (cursors from :meth:`cursor` stop working)."""
        self._con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A new connection to the same database, for read-only queries from another thread."""
        return self._con.cursor()

    def reader(self) -> StoreReader:
        """Reads over a cursor of their own, for a thread other than the writer's."""
        return StoreReader(self._con.cursor(), self.path)

    def positions(self) -> dict[int, Position]:
        """The stored position of every partition seen so far."""
        return self._reads.positions()

    def load_states(self, operation_ids: Collection[str]) -> dict[str, ExecutionState]:
        """The exact current states of these operations (absent ones are left out), in one query."""
        return self._reads.load_states(operation_ids)

    def current_states(self, partition: int | None = None) -> list[ExecutionState]:
        """Every current state (of one partition, or all), ordered by operation_id."""
        return self._reads.current_states(partition)

    def operation_ids(self, partitions: Collection[int]) -> set[str]:
        """See :meth:`StoreReader.operation_ids`."""
        return self._reads.operation_ids(partitions)

    def expiry_candidates(self, now_ms: int, limit: int = 1000) -> list[tuple[int, str, str, str]]:
        """See :meth:`StoreReader.expiry_candidates`."""
        return self._reads.expiry_candidates(now_ms, limit)

    # --- writes ---------------------------------------------------------------------

    def commit(self, batch: Batch) -> None:
        """Write one batch in ONE transaction: versions, current rows, audit, positions.

        Idempotent: committing the same batch again (a refold after a crash)
        adds no rows and moves nothing backwards.
        """
        versions = _version_rows(batch.snapshots)
        tables = {
            "_b_audit": arrow_table(REQUESTS, [_audit(e) for e in batch.audit]),
            "_b_history": versions.history,
            "_b_executions": versions.executions,
            "_b_dead": arrow_table(DEAD_LETTERS, [_dead_letter_row(d) for d in batch.dead_letters]),
            "_b_positions": _positions_table(batch.positions),
        }
        with self._registered(**tables), self._transaction("commit"):
            self._write_versions(self._insert_history)
            self._write_audit()
            self._write_positions(_ADVANCE_POSITIONS)
        if self._timed_checkpoints.due():
            self._timed_checkpoint()
        if self._after_commit is not None:
            self._after_commit(self._con)

    def _timed_checkpoint(self) -> None:
        """Write the log's rows into the file (DuckDB's ``CHECKPOINT``), freeing their memory."""
        # serve's other writers (the checkpoints' projection) share the file, and DuckDB
        # refuses a CHECKPOINT while one of them is inside a transaction (FORCE would abort
        # it). The timed checkpoint only bounds memory: put it off to the next commit.
        try:
            self._con.execute("CHECKPOINT")
        except duckdb.TransactionException:
            self._timed_checkpoints.again()
        except duckdb.Error as exc:
            raise store_failure("checkpoint", self.path, exc) from exc

    def restore_partition(
        self,
        partition: int,
        snapshots: Sequence[ExecutionSnapshot],
        position: Position,
        *,
        also: Callable[[duckdb.DuckDBPyConnection], None] | None = None,
    ) -> None:
        """Replace one partition's current rows with ``snapshots``, in ONE transaction.

        ``snapshots`` is what the compacted executions topic holds for the
        partition; for each operation the highest version wins. Their history
        rows are added if missing and the position is set as given (even
        backwards: a restore is authoritative; history rows past a position set
        backwards are removed, since folding from it makes them again). ``also`` writes
        more in the same transaction (the history below the position, refolded).
        """
        ordered = _restore_order(partition, snapshots)
        versions = _version_rows(ordered)
        tables = {
            "_b_history": versions.history,
            "_b_executions": versions.executions,
            "_b_positions": _positions_table({partition: position}),
        }
        with self._registered(**tables), self._transaction("restore"):
            self._con.execute("DELETE FROM executions WHERE partition = ?", [partition])
            # A position set backwards: the versions past it are folded (identically) again.
            self._con.execute(
                "DELETE FROM history WHERE partition = ? AND valid_from_offset >= ?",
                [partition, position.next_offset],
            )
            self._write_versions(_RESTORE_HISTORY)
            self._write_positions(_SET_POSITIONS)
            if also is not None:
                also(self._con)

    # Separate steps so that a test can make one of them fail mid-transaction.
    def _write_versions(self, insert_history: str) -> None:
        self._con.execute(insert_history)
        self._con.execute(_UPSERT_EXECUTIONS)

    def _write_audit(self) -> None:
        self._con.execute(_INSERT_AUDIT)
        self._con.execute(_INSERT_DEAD)

    def _write_positions(self, statement: str) -> None:
        self._con.execute(statement)

    def _registered(self, **tables: Any) -> AbstractContextManager[None]:
        return registered(self._con, tables)

    @contextmanager
    def _transaction(self, what: str) -> Iterator[None]:
        """BEGIN … COMMIT, rolled back on any error (a failed write changes nothing)."""
        try:
            self._con.execute("BEGIN TRANSACTION")
        except duckdb.Error as exc:
            raise store_failure(f"{what} (begin)", self.path, exc) from exc
        try:
            yield
            self._con.execute("COMMIT")
        except BaseException as exc:
            # After a failed write (a full disk) DuckDB may refuse the rollback too: the
            # first error is the one to report, and the file keeps its last commit.
            with suppress(duckdb.Error):
                self._con.execute("ROLLBACK")
            if isinstance(exc, duckdb.Error):
                raise store_failure(what, self.path, exc) from exc
            raise


@contextmanager
def registered(con: duckdb.DuckDBPyConnection, tables: Mapping[str, Any]) -> Iterator[None]:
    """Expose Arrow tables to SQL on ``con`` under these names for the duration of the block."""
    for name, table in tables.items():
        con.register(name, table)
    try:
        yield
    finally:
        for name in tables:
            con.unregister(name)


def _history_is_keyed(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``history`` still has the primary key of the files written before."""
    # fetchall: a result left unfinished makes DuckDB refuse the next register().
    [(keys,)] = con.execute(
        "SELECT count(*) FROM duckdb_constraints() "
        "WHERE table_name = 'history' AND constraint_type = 'PRIMARY KEY'"
    ).fetchall()
    return bool(keys)


def _restore_order(
    partition: int, snapshots: Sequence[ExecutionSnapshot]
) -> list[ExecutionSnapshot]:
    """The last version per operation, in source-offset order; all must be of ``partition``."""
    best: dict[str, ExecutionSnapshot] = {}
    for snap in snapshots:
        if snap.source_partition != partition:
            raise StoreError(
                f"snapshot of {snap.state.operation_id} is from partition "
                f"{snap.source_partition}, not {partition}"
            )
        held = best.get(snap.state.operation_id)
        if held is None or snap.state.version >= held.state.version:
            best[snap.state.operation_id] = snap
    return sorted(best.values(), key=lambda s: s.source_offset)
