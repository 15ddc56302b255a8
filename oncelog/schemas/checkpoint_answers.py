"""What the query API answers about LangGraph checkpoints, and the saver reads (docs/langgraph.md).

Values are the bytes the saver's serde made, never decoded here: the read side does
not know the saver's types. In JSON they travel as base64.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel, ConfigDict


class _Frozen(BaseModel):
    model_config = ConfigDict(
        frozen=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64"
    )


class CheckpointBlob(_Frozen):
    """One channel's value at one version (its parts joined)."""

    channel: str
    version: str
    type: str
    data: bytes


class WriteFields(Protocol):
    """What names a pending write: a checkpoint record of it, or a row of its parts."""

    @property
    def value_type(self) -> str: ...
    @property
    def task_id(self) -> str | None: ...
    @property
    def task_path(self) -> str | None: ...
    @property
    def idx(self) -> int | None: ...
    @property
    def channel(self) -> str | None: ...


class CheckpointWrite(_Frozen):
    """One pending write of a task (its parts joined)."""

    task_id: str
    channel: str
    type: str
    data: bytes
    task_path: str
    idx: int

    @classmethod
    def of(cls, named: WriteFields, data: bytes) -> CheckpointWrite:
        """The write ``named`` describes, its parts joined into ``data``."""
        task, channel, path, idx = named.task_id, named.channel, named.task_path, named.idx
        return cls(
            task_id=task or "", channel=channel or "", type=named.value_type, data=data,
            task_path=path or "", idx=idx or 0,
        )  # fmt: skip


class CheckpointItem(_Frozen):
    """One checkpoint with its channel values and pending writes, as LangGraph reads it."""

    partition: int
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    type: str
    data: bytes
    metadata_type: str
    metadata: bytes
    blobs: list[CheckpointBlob]
    writes: list[CheckpointWrite]


class CheckpointPart(_Frozen):
    """One row of the ``checkpoints`` table: a part of a checkpoint, write or channel value.

    ``data`` and ``metadata`` are left out (None) unless asked for.
    """

    record_key: str
    part: int
    parts: int
    partition: int
    offset: int
    kind: str
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_checkpoint_id: str | None
    run_id: str | None
    channel: str | None
    version: str | None
    task_id: str | None
    task_path: str | None
    idx: int | None
    value_type: str
    metadata_type: str | None
    metadata: bytes | None
    metadata_json: str | None
    channel_versions_json: str | None
    data: bytes | None
    copied_from: str | None = None  # added after the others: older answers lack it
