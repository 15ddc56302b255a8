"""Restore a partition's current state from the compacted executions topic.

Also the choice a newly assigned partition makes between its instance's own
DuckDB position and a restore (:func:`needs_restore`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import duckdb
from confluent_kafka import TopicPartition

from oncelog.errors import CodecError
from oncelog.kafka.reader import plain_consumer, read_to_end, watermarks
from oncelog.projector.store import Position, Store
from oncelog.schemas.codec import decode_snapshot
from oncelog.schemas.models import ExecutionSnapshot
from oncelog.settings import Settings


def _snapshots(kafka: Mapping[str, Any], topic: str, partition: int) -> Iterator[ExecutionSnapshot]:
    """The decodable snapshots of one partition of the executions topic, in log order."""
    for msg in read_to_end(kafka, topic, partition):
        try:
            yield decode_snapshot(msg.value() or b"")
        except CodecError:
            # Only the projector writes here; a foreign record must not stop recovery.
            continue


def latest_snapshots(
    kafka: Mapping[str, Any], topic: str, partition: int
) -> dict[str, ExecutionSnapshot]:
    """The newest version per operation on one partition of the executions topic.

    The highest version wins, not the last record: a zombie projector (one whose
    session expired while it was paused) can deliver an older version it had queued
    after the new owner published a newer one. Both are identical to their first
    publication, but the last record would then be the older one.
    """
    return newest_versions(_snapshots(kafka, topic, partition))


def newest_versions(snapshots: Iterable[ExecutionSnapshot]) -> dict[str, ExecutionSnapshot]:
    """The highest version per operation among ``snapshots`` (the later one on a tie)."""
    latest: dict[str, ExecutionSnapshot] = {}
    for snap in snapshots:
        held = latest.get(snap.state.operation_id)
        if held is None or snap.state.version >= held.state.version:
            latest[snap.state.operation_id] = snap
    return latest


def position_after(snapshots: Mapping[str, ExecutionSnapshot]) -> Position:
    """Where folding resumes: right after the newest request that made a snapshot.

    Requests after it changed nothing, so refolding them from the restored
    states republishes identical decisions. The clamp restarts at that
    request's log time, which is what it was after folding it.
    """
    if not snapshots:
        return Position(0, None)
    newest = max(snapshots.values(), key=lambda s: s.source_offset)
    return Position(newest.source_offset + 1, newest.log_time_ms)


def restore_partition(
    settings: Settings,
    kafka: Mapping[str, Any],
    store: Store,
    partition: int,
    handoff: Position | None = None,
    *,
    also: Callable[[Position, duckdb.DuckDBPyConnection], None] | None = None,
) -> Position:
    """Load ``partition``'s states from the executions topic into ``store``.

    ``handoff`` is the position the partition's previous owner committed to the
    group, if any (see :func:`needs_restore`): every request before it that changed
    a state has its snapshot in the topic, so folding may resume there when it is
    past the newest snapshot, without refolding the requests that changed nothing.
    ``also(position, connection)`` writes more in the restore's transaction.
    """
    snapshots = latest_snapshots(kafka, settings.executions_topic, partition)
    position = position_after(snapshots)
    if handoff is not None and handoff.next_offset > position.next_offset:
        position = handoff
    ordered = sorted(snapshots.values(), key=lambda s: s.source_offset)
    write = None if also is None else functools.partial(also, position)
    store.restore_partition(partition, ordered, position, also=write)
    return position


# --- resume or restore ----------------------------------------------------------------


def partition_sizes(
    kafka: Mapping[str, Any], topic: str, partitions: Sequence[int]
) -> dict[int, int]:
    """Records in each of ``partitions`` of ``topic`` now (high - low watermark)."""
    if not partitions:
        return {}
    consumer = plain_consumer(kafka)
    try:
        marks = {p: watermarks(consumer, TopicPartition(topic, p)) for p in partitions}
    finally:
        consumer.close()
    return {p: high - low for p, (low, high) in marks.items()}


def needs_restore(own: Position | None, handoff: Position | None, records: int) -> bool:
    """Restore rather than resume from the instance's own position ``own``?

    ``handoff`` is what the partition's last owner committed to the consumer group
    (its DuckDB position, committed after its producer flush); ``records`` is the
    size of the partition in the executions topic, what a restore reads.

    Without an own position there is nothing to resume. When nobody got further
    than ``own`` (a crash restart: this instance's own handoff is never ahead of
    its file), folding resumes there, as it always did. When another member got
    further while this instance did not own the partition, ``own`` is stale.
    Refolding the gap from it is correct (folding is deterministic: it republishes
    identical decisions and snapshots) and keeps this shard's history whole, but
    costs one fold and one republished decision per request of the gap; a restore
    costs one read of the partition, and no publishing. The cheaper is chosen; at
    equal counts the restore is.
    """
    if own is None:
        return True
    if handoff is None or handoff.next_offset <= own.next_offset:
        return False
    return handoff.next_offset - own.next_offset >= records
