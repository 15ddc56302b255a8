"""Rebuild and verify the checkpoints' rows from ``<prefix>.checkpoints`` alone.

``oncelog rebuild`` folds the topic's partitions to their ends; ``oncelog verify``
refolds them into its scratch file up to the live file's positions and compares the
rows, byte for byte. The fold keeps the last record per key, which is what compaction
keeps, so the live rows and the refold of the compacted log agree; they may differ
only where compaction dropped a record below the live position that a later record,
past that position, replaced (a live file that stopped behind the log).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from oncelog.errors import TopicMissingError
from oncelog.kafka.reader import topic_ends
from oncelog.projector.checkpoint_store import CheckpointStore
from oncelog.projector.checkpoints import refold
from oncelog.projector.store import Store
from oncelog.projector.tables import CHECKPOINTS, column_list
from oncelog.settings import Settings


def rebuild_checkpoints(
    settings: Settings,
    kafka: Mapping[str, Any],
    store: Store,
    partitions: Collection[int] | None,
) -> int:
    """Fold the checkpoints topic (these partitions, or all: None) to its ends into ``store``;
    the records folded (0 without the topic: a ledger from before it had none)."""
    try:
        ends = topic_ends(kafka, settings.checkpoints_topic)
    except TopicMissingError:
        return 0
    chosen = {p: end for p, end in ends.items() if partitions is None or p in partitions}
    target = CheckpointStore(store)
    try:
        return refold(kafka, settings.checkpoints_topic, target, chosen)
    finally:
        target.close()


def rows(store: Store, partitions: Collection[int]) -> dict[tuple[str, int], tuple[Any, ...]]:
    """Every checkpoint row of ``partitions``, by (record_key, part), in the layout's column
    order (an older file's migrated columns come last in the table)."""
    if not partitions:
        return {}
    marks = ", ".join("?" * len(partitions))
    cursor = store.cursor()
    try:
        found = cursor.execute(
            f"SELECT {column_list(CHECKPOINTS)} FROM checkpoints WHERE partition IN ({marks})",
            list(partitions),
        ).fetchall()
    finally:
        cursor.close()
    return {(row[0], row[1]): tuple(row) for row in found}


def compare_checkpoints(
    settings: Settings, kafka: Mapping[str, Any], live: Store, scratch: Store
) -> tuple[int, list[str]]:
    """Refold into ``scratch`` up to ``live``'s checkpoint positions, compare the rows;
    return the rows compared and one line per difference."""
    held = CheckpointStore(live)
    try:
        positions = held.positions()
    finally:
        held.close()
    if not positions:
        return 0, []
    target = CheckpointStore(scratch)
    try:
        refold(kafka, settings.checkpoints_topic, target, positions)
    finally:
        target.close()
    expected, actual = rows(scratch, positions), rows(live, positions)
    diffs = [f"checkpoints: {key} missing" for key in sorted(expected.keys() - actual.keys())]
    diffs += [f"checkpoints: {key} unexpected" for key in sorted(actual.keys() - expected.keys())]
    diffs += [
        f"checkpoints: {key} differs (partition {expected[key][2]}, offset {expected[key][3]} "
        f"refolded, offset {actual[key][3]} live)"
        for key in sorted(expected.keys() & actual.keys())
        if expected[key] != actual[key]
    ]
    return len(actual), diffs
