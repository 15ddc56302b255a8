"""A checkpoint put through the saver, and the parts ``serve`` holds: what the saver's tests
write and count with."""

from __future__ import annotations

from typing import Any

import httpx
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointMetadata, empty_checkpoint

from oncelog.integrations.langgraph import OncelogSaver
from tests.served import Served


def put_values(
    saver: OncelogSaver,
    thread: str,
    values: dict[str, Any],
    parent: str | None = None,
    metadata: CheckpointMetadata | None = None,
) -> RunnableConfig:
    """A checkpoint of ``values`` on ``thread``'s root namespace (after ``parent``)."""
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = {k: saver.get_next_version(None, None) for k in values}
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if parent is not None:
        conf["checkpoint_id"] = parent
    meta = CheckpointMetadata(step=0) if metadata is None else metadata
    return saver.put(
        RunnableConfig(configurable=conf), checkpoint, meta, checkpoint["channel_versions"]
    )


def stored_parts(served: Served, thread: str) -> list[dict[str, Any]]:
    """Every part ``serve`` holds for ``thread`` (one page: the tests stay under it)."""
    answer = httpx.get(f"{served.url}/v1/checkpoint-parts/{thread}", params={"limit": 1000})
    assert answer.status_code == 200, answer.text
    assert not answer.json()["truncated"]
    items: list[dict[str, Any]] = answer.json()["items"]
    return items
