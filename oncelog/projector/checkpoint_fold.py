"""Fold records of ``<prefix>.checkpoints`` into rows: the last record of each key wins. Pure.

The checkpoints topic is compacted, and this fold is what compaction keeps: for each
Kafka key (a part of a logical record, :mod:`oncelog.schemas.checkpoint_parts`) the
last value, none after a tombstone. A refold of the compacted log therefore gives the
same rows as the live fold of the whole log (offsets never change under compaction),
and the rows depend on the log alone: refold, restart and rebuild agree.
A record that cannot be decoded, or has no key, is a dead letter; its partition goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from oncelog.errors import CodecError, InvalidArgumentError
from oncelog.projector import row_builders
from oncelog.projector.rows import Row
from oncelog.projector.store import DeadLetter
from oncelog.schemas.checkpoint_parts import record_key, split_kafka_key
from oncelog.schemas.codec import decode_checkpoint
from oncelog.schemas.models import CheckpointRecord


class RawRecord(NamedTuple):
    """One consumed record of the checkpoints topic, as the fold needs it."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    log_time_ms: int


PartKey = tuple[str, int]
"""(record_key, part): one row of the ``checkpoints`` table."""


@dataclass
class CheckpointChanges:
    """What one batch changes: each touched part's row now (None: deleted), the dead
    letters, and each partition's next offset."""

    rows: dict[PartKey, Row | None] = field(default_factory=dict)
    dead: list[DeadLetter] = field(default_factory=list)
    positions: dict[int, int] = field(default_factory=dict)


_Builder = Callable[[int, int, str, CheckpointRecord], Row]
checkpoint_row: Final[_Builder] = row_builders.checkpoint_row
"""``checkpoint_row(partition, offset, key, record)``: the ``checkpoints`` row of one record,
generated (:mod:`oncelog.projector.rows`) from the table layout
(:data:`~oncelog.projector.tables.CHECKPOINTS`), which mirrors every field of
``checkpoint.avsc``."""


def fold_records(topic: str, records: Iterable[RawRecord]) -> CheckpointChanges:
    """The changes of ``records`` (log order within each partition)."""
    out = CheckpointChanges()
    for r in records:
        out.positions[r.partition] = max(out.positions.get(r.partition, 0), r.offset + 1)
        try:
            part_key = _part_key(r)
            row = None if r.value is None else _row(r, part_key)
        except (CodecError, InvalidArgumentError) as exc:
            length = len(r.value or b"")
            message = f"{topic}[{r.partition}] offset {r.offset}: {exc}"
            out.dead.append(
                DeadLetter(topic, r.partition, r.offset, r.log_time_ms, exc.code, message, length)
            )
            continue
        out.rows[part_key] = row
    return out


def _part_key(r: RawRecord) -> PartKey:
    if r.key is None:
        raise InvalidArgumentError("a checkpoint record without a key")
    return split_kafka_key(r.key)


def _row(r: RawRecord, part_key: PartKey) -> Row:
    assert r.value is not None
    rec = decode_checkpoint(r.value)
    key = record_key(rec)
    if (key, rec.part) != part_key:
        raise InvalidArgumentError(f"the key {part_key} does not name its value's {key!r}")
    return checkpoint_row(r.partition, r.offset, key, rec)
