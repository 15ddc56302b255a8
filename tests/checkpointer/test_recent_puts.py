"""The saver's memory of its own puts, without a broker: when it answers and when not."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointMetadata, empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from oncelog.integrations.langgraph import wire
from oncelog.integrations.langgraph.recent import RecentPuts
from oncelog.schemas.models import CheckpointRecord

SERDE = JsonPlusSerializer()


def _put(
    values: dict[str, Any], versions: dict[str, str], new: dict[str, str]
) -> tuple[str, list[CheckpointRecord]]:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = dict(versions)
    config = RunnableConfig(configurable={"thread_id": "t", "checkpoint_ns": ""})
    meta = CheckpointMetadata(step=1)
    records = wire.put_records(SERDE, config, checkpoint, meta, dict[str, str | int | float](new))
    return checkpoint["id"], records


def _values(memory: RecentPuts) -> dict[str, Any] | None:
    item = memory.item("t", "", None)
    return None if item is None else wire.as_tuple(SERDE, item).checkpoint["channel_values"]


def test_a_value_put_earlier_is_named_again_and_an_unknown_one_misses() -> None:
    memory = RecentPuts()
    _, first = _put({"a": 1, "b": 2}, {"a": "1", "b": "1"}, {"a": "1", "b": "1"})
    memory.put(0, first)
    _, second = _put({"a": 5, "b": 2}, {"a": "2", "b": "1"}, {"a": "2"})
    memory.put(0, second)
    assert _values(memory) == {"a": 5, "b": 2}  # b from the first put
    _, third = _put({"c": 1}, {"c": "1", "z": "9"}, {"c": "1"})  # z: never seen here
    memory.put(0, third)
    assert memory.item("t", "", None) is None


def test_records_of_another_writer_between_own_ones_forget_the_partition() -> None:
    memory = RecentPuts()
    _, records = _put({"a": 1}, {"a": "1"}, {"a": "1"})
    assert memory.acknowledged(0, [10, 11])
    memory.put(0, records)
    assert memory.end(0) == 12
    assert memory.acknowledged(0, [12])  # contiguous: still ours alone
    assert memory.item("t", "", None) is not None
    assert not memory.acknowledged(0, [14])  # 12..13 someone else's
    assert memory.item("t", "", None) is None
    assert memory.end(0) == 15


def test_pending_writes_join_their_checkpoint_and_a_resent_one_replaces() -> None:
    memory = RecentPuts()
    checkpoint_id, records = _put({"a": 1}, {"a": "1"}, {"a": "1"})
    memory.put(0, records)
    config = RunnableConfig(configurable={"thread_id": "t", "checkpoint_id": checkpoint_id})
    memory.put_writes(wire.write_records(SERDE, config, [("a", 2)], "task", ""))
    memory.put_writes(wire.write_records(SERDE, config, [("a", 3)], "task", ""))
    other = RunnableConfig(configurable={"thread_id": "t", "checkpoint_id": "older"})
    memory.put_writes(wire.write_records(SERDE, other, [("a", 9)], "task", ""))
    item = memory.item("t", "", checkpoint_id)
    assert item is not None
    assert wire.as_tuple(SERDE, item).pending_writes == [("task", "a", 3)]
    assert memory.item("t", "", "older") is None
