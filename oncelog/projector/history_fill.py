"""Fill in the history a DuckDB file lacks, from the requests topic (docs/spec.md §9).

A partition restored from the compacted executions topic (a new file, a file the group
got past, a rebalance) gets its current states and its position, not the requests and
the versions before that position: its timelines, histories and audit would answer
without them, and nothing would say so. Before such a partition folds anything, the
requests below its position are refolded from the requests topic into a scratch file
(the bulk refold of ``oncelog rebuild``) and the rows the file lacks are copied in: the
audit (``requests``, ``dead_letters``) and the versions (``history``), in the restore's
own transaction when there is one (no reader sees the restored position without them).
Current states and positions stay as they are: folding is deterministic, the refold
makes the same ones.

The requests topic is append-only and written without transactions, so its offsets are
dense: a partition's history is whole when the file holds a row (a request or a dead
letter) for every offset below its position. A partition whose start the topic's
retention deleted cannot be refolded (its states would be wrong), and its history before
the retention is gone from the log too: it is left as it is.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import duckdb
from confluent_kafka import TopicPartition

from oncelog.kafka.reader import plain_consumer, watermarks
from oncelog.projector.rebuild import rebuild_from_requests
from oncelog.projector.store import Store, registered
from oncelog.projector.store_file import store_failure
from oncelog.projector.tables import DEAD_LETTERS, HISTORY, REQUESTS, column_list
from oncelog.settings import Settings

_HELD: Final = """
SELECT (SELECT count(*) FROM (
  SELECT "offset" FROM requests WHERE "partition" = $p AND "offset" < $end
  UNION
  SELECT "offset" FROM dead_letters WHERE topic = $topic AND "partition" = $p AND "offset" < $end
)) + (
  -- Requests pruned to the archive are held there (oncelog.archive.prune), not missing.
  SELECT coalesce(sum("rows"), 0) FROM archived_rows
  WHERE table_name = 'requests' AND "partition" = $p AND last_offset < $end
)
"""


@dataclass(frozen=True, slots=True)
class Gap:
    """Requests of one partition, below the file's position, that the file lacks."""

    partition: int
    position: int
    """The file's next offset of the partition: the history below it must be whole."""
    missing: int
    """Offsets below ``position`` with neither a request row nor a dead letter."""


def history_gaps(
    store: Store, topic: str, positions: Mapping[int, int], lows: Mapping[int, int]
) -> list[Gap]:
    """The partitions of ``positions`` (partition -> the file's next offset) whose history
    the file lacks in part, where the log still holds it all (``lows``: the topic's low
    watermarks; a partition that retention trimmed is not a gap that can be filled)."""
    gaps: list[Gap] = []
    cursor = store.cursor()
    try:
        for p, end in sorted(positions.items()):
            if lows.get(p, 0) != 0 or end <= 0:
                continue
            params = {"p": p, "end": end, "topic": topic}
            [(held,)] = cursor.execute(_HELD, params).fetchall()
            if held < end:
                gaps.append(Gap(p, end, end - held))
    except duckdb.Error as exc:
        raise store_failure("reading the history's extent", store.path, exc) from exc
    finally:
        cursor.close()
    return gaps


def log_extent(
    kafka: Mapping[str, Any], topic: str, partitions: list[int]
) -> dict[int, tuple[int, int]]:
    """(low, high) watermarks of each of ``partitions`` of ``topic``: the first offset the
    log still holds, and the next it will write."""
    if not partitions:
        return {}
    consumer = plain_consumer(kafka)
    try:
        return {p: watermarks(consumer, TopicPartition(topic, p)) for p in partitions}
    finally:
        consumer.close()


@dataclass(frozen=True, slots=True)
class Filled:
    """What a fill copied into the file, per partition: requests and versions."""

    requests: dict[int, int]
    versions: dict[int, int]


class HistoryRefill:
    """The refolded history of the partitions with a gap, to copy into ``store``."""

    def __init__(self, store: Store, topic: str, scratch: Store | None, gaps: list[Gap]) -> None:
        self._store, self._topic, self._scratch = store, topic, scratch
        self.partitions = frozenset(g.partition for g in gaps)
        self.filled = Filled({}, {})

    def copy(self, con: duckdb.DuckDBPyConnection, partition: int, end: int) -> None:
        """Add the rows below ``end`` of ``partition`` that the file lacks, on ``con``, in
        the caller's transaction (a restore's: state, position and history in one)."""
        if self._scratch is None or partition not in self.partitions:
            return
        p = partition
        args: dict[str, list[Any]] = {"requests": [p, end], "dead_letters": [self._topic, p, end]}
        args["history"] = [p, end]
        tables = {
            f"_f_{name}": _read(self._scratch, sql, args[name]) for name, sql in _PICK.items()
        }
        with registered(con, tables):
            added = {name: _inserted(con, sql) for name, sql in _ADD.items()}
        self.filled.requests[p] = added["requests"]
        self.filled.versions[p] = added["history"]

    def copy_alone(self, partition: int, end: int) -> None:
        """:meth:`copy` in a transaction of its own."""
        con = self._store.cursor()
        try:
            con.execute("BEGIN TRANSACTION")
            try:
                self.copy(con, partition, end)
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        except duckdb.Error as exc:
            what = f"filling the history of partition {partition}"
            raise store_failure(what, self._store.path, exc) from exc
        finally:
            con.close()


@contextmanager
def refolded(
    settings: Settings,
    kafka: Mapping[str, Any],
    store: Store,
    ends: Mapping[int, int],
    extent: Mapping[int, tuple[int, int]],
) -> Iterator[HistoryRefill]:
    """The history of the partitions of ``ends`` (partition -> an offset the history must
    be whole below) that ``store`` lacks in part, refolded from the requests topic into a
    scratch file beside the store's while the block runs; ``extent`` is :func:`log_extent`.
    """
    topic = settings.requests_topic
    lows = {p: low for p, (low, _) in extent.items()}
    gaps = history_gaps(store, topic, ends, lows)
    if not gaps:
        yield HistoryRefill(store, topic, None, [])
        return
    scratch_dir = tempfile.TemporaryDirectory(prefix="history-", dir=store.path.parent)
    with scratch_dir as tmp, Store(Path(tmp) / "refold.duckdb") as scratch:
        rebuild_from_requests(settings, kafka, scratch, None, [g.partition for g in gaps])
        yield HistoryRefill(store, topic, scratch, gaps)


def fill_history(
    settings: Settings, kafka: Mapping[str, Any], store: Store, positions: Mapping[int, int]
) -> Filled:
    """Copy into ``store`` the history it lacks below ``positions`` (partition -> next
    offset), refolded from the requests topic; nothing when the file's history is whole."""
    extent = log_extent(kafka, settings.requests_topic, sorted(positions))
    with refolded(settings, kafka, store, positions, extent) as refill:
        for p in sorted(refill.partitions):
            refill.copy_alone(p, positions[p])
    return refill.filled


# Rows of one partition below its position, read from the refold (the same layouts).
_PICK: Final = {
    "requests": f'SELECT {column_list(REQUESTS)} FROM requests WHERE "partition" = ? '
    'AND "offset" < ?',
    "dead_letters": f"SELECT {column_list(DEAD_LETTERS)} FROM dead_letters "
    'WHERE topic = ? AND "partition" = ? AND "offset" < ?',
    "history": f'SELECT {column_list(HISTORY)} FROM history WHERE "partition" = ? '
    "AND valid_from_offset < ?",
}
_ADD: Final = {
    "requests": f"INSERT OR IGNORE INTO requests ({column_list(REQUESTS)}) "
    "SELECT * FROM _f_requests",
    "dead_letters": f"INSERT OR IGNORE INTO dead_letters ({column_list(DEAD_LETTERS)}) "
    "SELECT * FROM _f_dead_letters",
    # History has no key (a file of an older version keeps one): a version is added once.
    "history": f"INSERT INTO history ({column_list(HISTORY)}) SELECT * FROM _f_history f "
    "WHERE NOT EXISTS (SELECT 1 FROM history h "
    "WHERE h.operation_id = f.operation_id AND h.version = f.version)",
}


def _read(store: Store, sql: str, params: list[Any]) -> Any:
    """The rows of ``sql`` as an Arrow table."""
    con = store.cursor()
    try:
        return con.sql(sql, params=params).to_arrow_table()
    except duckdb.Error as exc:
        raise store_failure("reading the refolded history", store.path, exc) from exc
    finally:
        con.close()


def _inserted(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    """Run an ``INSERT`` and return how many rows it added."""
    row = con.execute(sql).fetchone()
    return int(row[0]) if row else 0
