"""Restore a partition's current state from the compacted executions topic."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oncelog.errors import CodecError
from oncelog.kafka.reader import read_to_end
from oncelog.projector.store import Position, Store
from oncelog.schemas.codec import decode_snapshot
from oncelog.schemas.models import ExecutionSnapshot
from oncelog.settings import Settings


def latest_snapshots(
    kafka: Mapping[str, Any], topic: str, partition: int
) -> dict[str, ExecutionSnapshot]:
    """The last snapshot per operation on one partition of the executions topic."""
    latest: dict[str, ExecutionSnapshot] = {}
    for msg in read_to_end(kafka, topic, partition):
        try:
            snap = decode_snapshot(msg.value() or b"")
        except CodecError:
            # Only the projector writes here; a foreign record must not stop recovery.
            continue
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
    settings: Settings, kafka: Mapping[str, Any], store: Store, partition: int
) -> Position:
    """Load ``partition``'s states from the executions topic into ``store``."""
    snapshots = latest_snapshots(kafka, settings.executions_topic, partition)
    position = position_after(snapshots)
    ordered = sorted(snapshots.values(), key=lambda s: s.source_offset)
    store.restore_partition(partition, ordered, position)
    return position
