"""How a LangGraph checkpoint is laid on ``<prefix>.checkpoints``: keys and parts. Pure.

Every value (a checkpoint without its channel values, one pending write, one channel
value) is one logical record, identified by its **record key**: the JSON array
``[kind, thread_id, checkpoint_ns, checkpoint_id, a, b]``, where ``a``/``b`` are a
write's task id and index, a blob's channel and version, and empty for a checkpoint.
A value longer than :data:`PART_BYTES` is split into parts, one Kafka record each,
keyed by the record key with the part number appended: compaction keeps the last
version of every part, and a null value (a tombstone) deletes one part.

The fold stores one row per part; readers join the parts of a value and skip a value
whose parts are not all there yet (a put that is still being written).
"""

from __future__ import annotations

import json
from typing import Final

from oncelog.errors import InvalidArgumentError
from oncelog.schemas.models import CheckpointKind, CheckpointRecord

PART_BYTES: Final = 1024 * 1024
"""The bytes of a value one record carries (the topic takes 4 MiB a record)."""

MAX_VALUE_BYTES: Final = 64 * 1024 * 1024
"""The largest serialized value (a checkpoint, a write, a channel value) a put takes."""

MAX_METADATA_BYTES: Final = 512 * 1024
"""The largest metadata (serialized, and as JSON) and channel-version map of a checkpoint."""


def record_key(record: CheckpointRecord) -> str:
    """The key of the logical record ``record`` is a part of."""
    if record.kind is CheckpointKind.WRITE:
        a, b = record.task_id or "", str(record.idx)
    elif record.kind is CheckpointKind.BLOB:
        a, b = record.channel or "", record.version or ""
    else:
        a, b = "", ""
    parts = [record.kind.value, record.thread_id, record.checkpoint_ns, record.checkpoint_id, a, b]
    return json.dumps(parts, separators=(",", ":"), ensure_ascii=False)


def kafka_key(key: str, part: int) -> bytes:
    """The Kafka key of part ``part`` of the record ``key``."""
    return f"{key[:-1]},{part}]".encode()


def split_kafka_key(raw: bytes) -> tuple[str, int]:
    """``(record key, part)`` of a Kafka key; ``InvalidArgumentError`` for any other bytes."""
    try:
        parts = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidArgumentError(f"not a checkpoint record key: {raw[:80]!r}") from exc
    if not (isinstance(parts, list) and len(parts) == 7 and isinstance(parts[6], int)):
        raise InvalidArgumentError(f"not a checkpoint record key: {raw[:80]!r}")
    return json.dumps(parts[:6], separators=(",", ":"), ensure_ascii=False), parts[6]


def split_value(data: bytes, part_bytes: int = PART_BYTES) -> list[bytes]:
    """``data`` in parts of at most ``part_bytes`` (one empty part for empty data)."""
    if not data:
        return [b""]
    return [data[i : i + part_bytes] for i in range(0, len(data), part_bytes)]


def join_parts(parts: dict[int, bytes], count: int) -> bytes | None:
    """The value of parts ``0..count-1``; None while any is missing."""
    if count < 1 or any(i not in parts for i in range(count)):
        return None
    return b"".join(parts[i] for i in range(count))
