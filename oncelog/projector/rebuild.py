"""Rebuild a DuckDB projection from the log, and verify a live one against a refold.

Both refold with :mod:`oncelog.projector.bulk_rebuild`, which runs the live
projector's decode, validation and fold and writes the live store's rows, so a
difference means the log, the snapshots and the projection disagree.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import duckdb
from confluent_kafka import TopicPartition

from oncelog.errors import ArchiveCorruptError, ArchiveError, ConfigError, StoreError
from oncelog.kafka.reader import high_watermarks, partition_count, plain_consumer, watermarks
from oncelog.projector.bulk_rebuild import ChunkWriter, Head, refold_partition
from oncelog.projector.checkpoint_verify import compare_checkpoints
from oncelog.projector.refold_pool import refold_in_processes
from oncelog.projector.restore import latest_snapshots, position_after
from oncelog.projector.state_blob import decode_state
from oncelog.projector.store import Store
from oncelog.schemas.models import ExecutionState
from oncelog.settings import Settings

Progress = Callable[[int, int], None]  # (partition, records done in it)

#: A refold of fewer records stays in this process (see rebuild_from_requests).
PARALLEL_MIN_RECORDS: Final = 100_000


def count_partitions(kafka: Mapping[str, Any], topic: str) -> int:
    """The partition count of ``topic``."""
    consumer = plain_consumer(kafka)
    try:
        return partition_count(consumer, topic, bootstrap=str(kafka.get("bootstrap.servers")))
    finally:
        consumer.close()


def rebuild_from_requests(
    settings: Settings,
    kafka: Mapping[str, Any],
    store: Store,
    progress: Progress | None = None,
    partitions: Sequence[int] | None = None,
    *,
    workers: int | None = None,
    heads: Mapping[int, Head] | None = None,
) -> int:
    """Refold ``partitions`` (default: all) of the requests topic from offset 0 into an
    empty ``store``: a shard's partitions rebuild that shard.

    ``workers`` > 1 refolds in that many processes while this one writes DuckDB
    (:mod:`oncelog.projector.refold_pool`); 1 refolds here; None chooses: one per
    core for a log of ``PARALLEL_MIN_RECORDS`` or more, since starting a worker costs
    about a second. ``heads``: each partition's records before its log's tail, read from
    the archive (refolded here, in this process).

    Raises:
        ArchiveError: a partition's log no longer starts at offset 0 and no archive head
            was given for it; ArchiveCorruptError: the log starts after the head ends.
    """
    if store.positions():
        # The bulk writer inserts without upserts: it relies on an empty projection.
        raise StoreError(f"{store.path} already holds a projection; rebuild needs an empty one")
    topic = settings.requests_topic
    count, chosen, processes = _plan(kafka, topic, partitions, workers)
    _check_covered(kafka, topic, chosen, heads or {})
    con = store.cursor()
    try:
        with _without_cyclic_gc():
            if processes > 1 and heads is None:
                return refold_in_processes(
                    kafka,
                    topic,
                    chosen,
                    count,
                    con,
                    workers=processes,
                    progress=progress,
                    scratch_in=store.path.parent,
                    max_clock_step_ms=settings.max_clock_step_ms,
                )
            return _refold_here(
                kafka,
                topic,
                chosen,
                count,
                con,
                progress=progress,
                max_clock_step_ms=settings.max_clock_step_ms,
                heads=heads,
            )
    finally:
        con.close()


def _refold_here(
    kafka: Mapping[str, Any],
    topic: str,
    chosen: list[int],
    count: int,
    con: duckdb.DuckDBPyConnection,
    *,
    progress: Progress | None,
    max_clock_step_ms: int,
    heads: Mapping[int, Head] | None = None,
) -> int:
    """Refold in this process, DuckDB writing on a thread of its own."""
    writer = ChunkWriter(con)
    try:
        return sum(
            refold_partition(
                kafka,
                topic,
                p,
                count,
                writer,
                progress=progress,
                max_clock_step_ms=max_clock_step_ms,
                head=(heads or {}).get(p),
            )
            for p in chosen
        )
    finally:
        writer.close()


def _check_covered(
    kafka: Mapping[str, Any], topic: str, chosen: list[int], heads: Mapping[int, Head]
) -> None:
    """Every chosen partition's records from offset 0: on the log, or in its head."""
    consumer = plain_consumer(kafka)
    try:
        for p in chosen:
            low, _ = watermarks(consumer, TopicPartition(topic, p))
            head = heads.get(p)
            if head is None and low > 0:
                raise ArchiveError(
                    f"{topic}[{p}] starts at offset {low}: the records before it left the "
                    "log, and no archive was read for them (set ONCELOG_ARCHIVE_URL to the "
                    "archive that holds them; docs/guides/retention.md)"
                )
            if head is not None and low > head[1]:
                raise ArchiveCorruptError(
                    f"{topic}[{p}] starts at offset {low} but its archive ends at {head[1]}: "
                    "the records between are in neither place"
                )
    finally:
        consumer.close()


def _plan(
    kafka: Mapping[str, Any], topic: str, partitions: Sequence[int] | None, requested: int | None
) -> tuple[int, list[int], int]:
    """(the topic's partition count, the chosen partitions, worker processes), asked of the
    broker by one consumer. Workers: ``requested``, else one per core when the chosen
    partitions (two or more) hold at least ``PARALLEL_MIN_RECORDS``; 1 means in-process.
    Their ends are read only when they decide it (a read per partition)."""
    consumer = plain_consumer(kafka)
    try:
        count = partition_count(consumer, topic, bootstrap=str(kafka.get("bootstrap.servers")))
        chosen = _chosen(partitions, count)
        if requested is not None:
            return count, chosen, max(1, min(requested, len(chosen)))
        if len(chosen) < 2:
            return count, chosen, 1
        if sum(high_watermarks(consumer, topic, chosen).values()) < PARALLEL_MIN_RECORDS:
            return count, chosen, 1
        return count, chosen, min(_usable_cores(), len(chosen))
    finally:
        consumer.close()


def _usable_cores() -> int:
    """The cores this process may run on (its affinity set where the OS tells it, which a
    container's cpuset narrows), not every core of the machine."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


@contextmanager
def _without_cyclic_gc() -> Iterator[None]:
    """Pause the cycle collector while a refold holds millions of rows and states.

    Those are tuples without cycles, but each full collection rescans all of
    them, a large share of the rebuild's CPU (docs/performance.md). The only cycles a
    refold makes are the exceptions of rejected records, collected afterwards.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _chosen(partitions: Sequence[int] | None, count: int) -> list[int]:
    """``partitions`` (all ``count`` when None), checked against the topic."""
    if partitions is None:
        return list(range(count))
    wrong = sorted(p for p in partitions if not 0 <= p < count)
    if wrong:
        raise ConfigError(f"partitions {wrong} do not exist (the topic has {count})")
    return sorted(set(partitions))


def rebuild_from_executions(
    settings: Settings,
    kafka: Mapping[str, Any],
    store: Store,
    partitions: Sequence[int] | None = None,
) -> int:
    """Restore ``partitions``' (default: all) current states from the compacted snapshots."""
    restored = 0
    count = count_partitions(kafka, settings.executions_topic)
    for p in _chosen(partitions, count):
        snapshots = latest_snapshots(kafka, settings.executions_topic, p)
        ordered = sorted(snapshots.values(), key=lambda s: s.source_offset)
        store.restore_partition(p, ordered, position_after(snapshots))
        restored += len(ordered)
    return restored


# --- verify ------------------------------------------------------------------------


@dataclass
class Report:
    """What verify compared and every difference it found."""

    refolded: int = 0
    compared_snapshots: int = 0
    compared_live: int | None = None
    compared_checkpoints: int = 0
    history_missing: int = 0
    """Requests and versions of the log below the live file's positions that it lacks."""
    differences: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing differs."""
        return not self.differences


_AS_OF = """
    SELECT state FROM history WHERE "partition" = ? AND valid_from_offset < ?
    QUALIFY row_number() OVER (PARTITION BY operation_id ORDER BY version DESC) = 1
"""


def states_as_of(store: Store, frontiers: Mapping[int, int]) -> dict[str, ExecutionState]:
    """Each operation's state after folding every request before its partition's frontier."""
    out: dict[str, ExecutionState] = {}
    cursor = store.cursor()
    for p, frontier in frontiers.items():
        for (blob,) in cursor.execute(_AS_OF, [p, frontier]).fetchall():
            state = decode_state(blob)
            out[state.operation_id] = state
    return out


def compare(
    label: str, expected: Mapping[str, ExecutionState], actual: Mapping[str, Any]
) -> list[str]:
    """Differences between two op id -> state maps, one line each."""
    diffs = [f"{label}: operation {op} missing" for op in expected.keys() - actual.keys()]
    diffs += [f"{label}: operation {op} unexpected" for op in actual.keys() - expected.keys()]
    for op in sorted(expected.keys() & actual.keys()):
        if expected[op] != actual[op]:
            diffs.append(
                f"{label}: operation {op} differs: refold={expected[op]!r} vs {actual[op]!r}"
            )
    return diffs


HistorySource = Callable[[duckdb.DuckDBPyConnection, str], str]
"""Rewrites a query of ``{requests}`` and ``{history}`` for a file whose history may
continue elsewhere (rows pruned into Parquet: :func:`oncelog.archive.prune.with_archived`)."""


def tables_only(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """The history as the file's own tables hold it."""
    return sql.replace("{requests}", "requests").replace("{history}", "history")


def verify(
    settings: Settings,
    kafka: Mapping[str, Any],
    scratch: Path,
    live: Store | None,
    progress: Progress | None = None,
    *,
    live_history: HistorySource = tables_only,
    heads: Mapping[int, Head] | None = None,
) -> Report:
    """Refold the requests log into ``scratch`` and compare with the snapshots and ``live``.

    With a ``live`` file, only the partitions it holds are compared: one projector
    of several (a shard) folds only its partitions, each up to its own position.
    ``progress`` hears the refold's records, as for :func:`rebuild_from_requests`;
    ``live_history`` reads the live file's history where it continues (pruned rows);
    ``heads``: the partitions' records before the log's tail, from the archive.
    """
    report = Report()
    snapshots: dict[int, dict[str, Any]] = {}
    shard = None if live is None else sorted(live.positions())
    # Snapshots first: every snapshot read now derives from a request already in the
    # log, so the refold below (which reads up to a later high watermark) covers it.
    count = count_partitions(kafka, settings.executions_topic)
    for p in _chosen(shard, count):
        snapshots[p] = latest_snapshots(kafka, settings.executions_topic, p)
    with Store(scratch, checkpoint_mb=settings.duckdb_checkpoint_mb) as store:
        report.refolded = rebuild_from_requests(
            settings, kafka, store, progress, shard, heads=heads
        )
        frontiers = {p: position_after(snaps).next_offset for p, snaps in snapshots.items()}
        published = {op: s.state for snaps in snapshots.values() for op, s in snaps.items()}
        report.compared_snapshots = len(published)
        report.differences += compare("snapshots", states_as_of(store, frontiers), published)
        if live is not None:
            positions = {p: pos.next_offset for p, pos in live.positions().items()}
            current = {s.operation_id: s for s in live.current_states()}
            report.compared_live = len(current)
            report.differences += compare("live", states_as_of(store, positions), current)
            report.history_missing, diffs = compare_history(store, live, positions, live_history)
            report.differences += diffs
            compared, diffs = compare_checkpoints(settings, kafka, live, store)
            report.compared_checkpoints = compared
            report.differences += diffs
    return report


# What the history holds below a position: the audit by offset, the versions by key.
# ``{requests}`` and ``{history}``: the tables, or what a ``HistorySource`` reads for them.
_HISTORY_KEYS: Final = {
    "requests": 'SELECT "offset" FROM {requests} WHERE "partition" = ? AND "offset" < ?',
    "versions": "SELECT operation_id, version FROM {history} "
    'WHERE "partition" = ? AND valid_from_offset < ?',
}


def compare_history(
    refold: Store,
    live: Store,
    positions: Mapping[int, int],
    live_history: HistorySource = tables_only,
) -> tuple[int, list[str]]:
    """The requests and versions below the live file's ``positions`` that the refold has
    and the file lacks (their count), and every difference of the two, a line each.

    ``live_history`` reads the live file's history where it continues (pruned rows)."""
    missing = 0
    diffs: list[str] = []
    for p, end in sorted(positions.items()):
        for what, sql in _HISTORY_KEYS.items():
            expected = _keys(refold, sql, p, end, tables_only)
            held = _keys(live, sql, p, end, live_history)
            lacking, extra = expected - held, held - expected
            missing += len(lacking)
            if lacking:
                diffs.append(
                    f"history: partition {p} lacks {len(lacking)} {what} the log has "
                    f"(first: {min(lacking)!r})"
                )
            if extra:
                diffs.append(f"history: partition {p} has {len(extra)} {what} the log has not")
    return missing, diffs


def _keys(store: Store, sql: str, partition: int, end: int, source: HistorySource) -> set[Any]:
    cursor = store.cursor()
    try:
        rows = cursor.execute(source(cursor, sql), [partition, end]).fetchall()
    except duckdb.Error as exc:
        raise StoreError(f"reading the history of {store.path} failed: {exc}") from exc
    finally:
        cursor.close()
    return {row[0] if len(row) == 1 else row for row in rows}
