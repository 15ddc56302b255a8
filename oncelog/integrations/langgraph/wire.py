"""A LangGraph put or put_writes as records of ``<prefix>.checkpoints``, and back.

Values go through the saver's serde (LangGraph's ``JsonPlusSerializer`` by default)
and travel as bytes; a value over :data:`PART_BYTES` is split into parts
(:mod:`oncelog.schemas.checkpoint_parts`). Sizes are checked before anything is
produced: a value over :data:`MAX_VALUE_BYTES`, or metadata over
:data:`MAX_METADATA_BYTES`, is refused with :class:`CheckpointTooLargeError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from oncelog.errors import CheckpointTooLargeError
from oncelog.schemas.checkpoint_answers import CheckpointItem
from oncelog.schemas.checkpoint_parts import (
    MAX_METADATA_BYTES,
    MAX_VALUE_BYTES,
    PART_BYTES,
    split_value,
)
from oncelog.schemas.models import CheckpointKind, CheckpointRecord

__all__ = ["MAX_METADATA_BYTES", "MAX_VALUE_BYTES", "PART_BYTES"]


def _checked(what: str, data: bytes, limit: int | None = None) -> bytes:
    limit = MAX_VALUE_BYTES if limit is None else limit  # read now: tests lower it
    if len(data) > limit:
        raise CheckpointTooLargeError(
            f"{what} is {len(data)} bytes serialized, over the saver's limit of {limit}: "
            "keep large payloads out of the graph's state (store them elsewhere and keep a "
            "reference), or split the channel"
        )
    return data


def _parts(base: CheckpointRecord, data: bytes) -> list[CheckpointRecord]:
    """``base`` once per part of ``data`` (fields repeated, ``part``/``parts`` set)."""
    chunks = split_value(data, PART_BYTES)
    fields = {f: getattr(base, f) for f in base.__dataclass_fields__}
    return [
        CheckpointRecord(**{**fields, "part": i, "parts": len(chunks), "data": chunk})
        for i, chunk in enumerate(chunks)
    ]


def put_records(
    serde: SerializerProtocol,
    config: RunnableConfig,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    new_versions: ChannelVersions,
) -> list[CheckpointRecord]:
    """The records of one put: the new channel values first, the checkpoint last (a
    reader that sees the checkpoint sees its values: one partition keeps their order)."""
    conf = config["configurable"]
    thread, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns", ""))
    body: dict[str, Any] = dict(checkpoint)
    values: dict[str, Any] = body.pop("channel_values", {})
    records: list[CheckpointRecord] = []
    for channel, version in new_versions.items():
        kind, data = serde.dumps_typed(values[channel]) if channel in values else ("empty", b"")
        base = _base(CheckpointKind.BLOB, thread, ns, "", kind)
        base = _with(base, channel=channel, version=str(version))
        records += _parts(base, _checked(f"channel {channel!r} of thread {thread!r}", data))
    meta_type, meta = serde.dumps_typed(dict(metadata))
    meta_json = json.dumps(dict(metadata), default=repr, ensure_ascii=False)
    versions = json.dumps({k: str(v) for k, v in checkpoint["channel_versions"].items()})
    what = f"the metadata of checkpoint {checkpoint['id']} of thread {thread!r}"
    _checked(what, meta + meta_json.encode() + versions.encode(), MAX_METADATA_BYTES)
    body_type, body_data = serde.dumps_typed(body)
    base = _base(CheckpointKind.CHECKPOINT, thread, ns, checkpoint["id"], body_type)
    run_id = metadata.get("run_id")
    base = _with(
        base,
        parent_checkpoint_id=conf.get("checkpoint_id"),
        run_id=None if run_id is None else str(run_id),
        metadata_type=meta_type,
        metadata=meta,
        metadata_json=meta_json,
        channel_versions_json=versions,
    )
    what = f"checkpoint {checkpoint['id']} of thread {thread!r}"
    return records + _parts(base, _checked(what, body_data))


def write_records(
    serde: SerializerProtocol,
    config: RunnableConfig,
    writes: Sequence[tuple[str, Any]],
    task_id: str,
    task_path: str,
) -> list[CheckpointRecord]:
    """The records of one put_writes: one value per write, keyed by (task, index)."""
    conf = config["configurable"]
    thread, ns = str(conf["thread_id"]), str(conf.get("checkpoint_ns", ""))
    checkpoint_id = str(conf["checkpoint_id"])
    records: list[CheckpointRecord] = []
    for i, (channel, value) in enumerate(writes):
        kind, data = serde.dumps_typed(value)
        base = _base(CheckpointKind.WRITE, thread, ns, checkpoint_id, kind)
        idx = WRITES_IDX_MAP.get(channel, i)
        base = _with(base, channel=channel, task_id=task_id, task_path=task_path, idx=idx)
        what = f"the write to {channel!r} of task {task_id} on thread {thread!r}"
        records += _parts(base, _checked(what, data))
    return records


def _base(
    kind: CheckpointKind, thread: str, ns: str, checkpoint_id: str, value_type: str
) -> CheckpointRecord:
    return CheckpointRecord(kind, thread, ns, checkpoint_id, value_type, 0, 1, b"")


def _with(record: CheckpointRecord, **changes: Any) -> CheckpointRecord:
    fields = {f: getattr(record, f) for f in record.__dataclass_fields__}
    return CheckpointRecord(**{**fields, **changes})


def as_tuple(serde: SerializerProtocol, item: CheckpointItem) -> CheckpointTuple:
    """The LangGraph tuple of one checkpoint the query API answered."""
    checkpoint: Checkpoint = serde.loads_typed((item.type, item.data))
    values = {b.channel: serde.loads_typed((b.type, b.data)) for b in item.blobs}
    config = _config(item.thread_id, item.checkpoint_ns, item.checkpoint_id)
    parent = item.parent_checkpoint_id
    return CheckpointTuple(
        config=config,
        checkpoint={**checkpoint, "channel_values": values},
        metadata=serde.loads_typed((item.metadata_type, item.metadata)),
        parent_config=None
        if parent is None
        else _config(item.thread_id, item.checkpoint_ns, parent),
        pending_writes=[
            (w.task_id, w.channel, serde.loads_typed((w.type, w.data))) for w in item.writes
        ],
    )


def _config(thread: str, ns: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {"thread_id": thread, "checkpoint_ns": ns, "checkpoint_id": checkpoint_id}
    }


def filter_param(filter: Mapping[str, Any] | None) -> str | None:
    """``list(filter=...)`` as the query API's JSON parameter."""
    return None if not filter else json.dumps(dict(filter), default=repr)
