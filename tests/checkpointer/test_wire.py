"""A LangGraph put as records, and what prune deletes: the saver's pure parts."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointMetadata, empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.serde.types import ERROR

from oncelog.integrations.langgraph import wire
from oncelog.integrations.langgraph.saver import _copied, _older_than_latest
from oncelog.schemas.checkpoint_answers import CheckpointPart
from oncelog.schemas.models import CheckpointKind, CheckpointRecord

SERDE = JsonPlusSerializer()


def test_a_put_writes_its_new_values_first_and_the_checkpoint_last() -> None:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"a": "x" * 10, "b": 2}
    checkpoint["channel_versions"] = {"a": 2, "b": 1, "gone": 3}
    config = RunnableConfig(configurable={"thread_id": "t", "checkpoint_id": "parent"})
    meta = CheckpointMetadata(step=3, run_id="r1")
    records = wire.put_records(SERDE, config, checkpoint, meta, {"a": 2, "gone": 3})
    kinds = [(r.kind, r.channel, r.version) for r in records]
    assert kinds == [
        (CheckpointKind.BLOB, "a", "2"),
        (CheckpointKind.BLOB, "gone", "3"),  # no value: an emptied channel
        (CheckpointKind.CHECKPOINT, None, None),
    ]
    assert records[1].value_type == "empty"
    head = records[-1]
    assert (head.parent_checkpoint_id, head.run_id, head.checkpoint_ns) == ("parent", "r1", "")
    assert json.loads(head.channel_versions_json or "") == {"a": "2", "b": "1", "gone": "3"}
    assert "channel_values" not in SERDE.loads_typed((head.value_type, head.data))


def test_special_writes_take_langgraph_s_negative_indexes() -> None:
    config = RunnableConfig(configurable={"thread_id": "t", "checkpoint_id": "c"})
    records = wire.write_records(SERDE, config, [("x", 1), (ERROR, "boom")], "task", "p")
    assert [(r.channel, r.idx, r.task_path) for r in records] == [("x", 0, "p"), (ERROR, -1, "p")]


def _part(kind: str, ns: str, cid: str, **fields: object) -> CheckpointPart:
    base: dict[str, object] = dict.fromkeys(CheckpointPart.model_fields)  # None: not stored
    base.update(
        record_key=f"{kind}-{ns}-{cid}-{fields.get('channel')}",
        part=0,
        parts=1,
        partition=0,
        offset=0,
        kind=kind,
        thread_id="t",
        checkpoint_ns=ns,
        checkpoint_id=cid,
        value_type="json",
    )
    return CheckpointPart.model_validate({**base, **fields})


def test_a_copied_part_keeps_every_field_of_its_record_but_the_thread() -> None:
    record_fields = [f.name for f in dataclasses.fields(CheckpointRecord)]
    filled: dict[str, Any] = {
        name: value
        for name, value in _FILLED.items()
        if name in record_fields and name not in ("kind", "thread_id", "copied_from")
    }
    assert set(filled) | {"kind", "thread_id", "copied_from"} == set(record_fields), "fill it"
    part = _part("write", "ns", "c1", **filled)
    copy = _copied(part, "target")
    expected = CheckpointRecord(CheckpointKind.WRITE, "target", copied_from="t", **filled)
    assert copy == expected


def test_a_copy_names_the_thread_it_was_copied_from_and_a_put_none() -> None:
    config = RunnableConfig(configurable={"thread_id": "a", "checkpoint_id": "c"})
    (put,) = wire.write_records(SERDE, config, [("x", 1)], "task", "")
    assert put.copied_from is None
    stored = _part("write", "", "c", thread_id="a", data=put.data)
    once = _copied(stored, "b")
    twice = _copied(_part("write", "", "c", thread_id="b", data=once.data), "c")
    assert (once.copied_from, twice.copied_from) == ("a", "b")  # the thread it came from


# A value for each field of a record (None would hide a field the copy drops).
_FILLED: dict[str, Any] = {
    "checkpoint_ns": "ns",
    "checkpoint_id": "c1",
    "value_type": "msgpack",
    "part": 1,
    "parts": 2,
    "data": b"value",
    "parent_checkpoint_id": "c0",
    "run_id": "r1",
    "channel": "messages",
    "version": "7",
    "task_id": "task",
    "task_path": "~p",
    "idx": -1,
    "metadata_type": "json",
    "metadata": b"{}",
    "metadata_json": "{}",
    "channel_versions_json": '{"messages": "7"}',
    "copied_from": "origin",  # replaced by the copy
}


def test_keep_latest_deletes_all_but_each_namespace_s_latest_and_what_it_names() -> None:
    latest = _part("checkpoint", "", "c2", channel_versions_json='{"a": "2"}')
    parts = [
        _part("checkpoint", "", "c1", channel_versions_json='{"a": "1"}'),
        latest,
        _part("checkpoint", "child", "c0"),
        _part("write", "", "c1", task_id="t1"),
        _part("write", "", "c2", task_id="t2"),
        _part("blob", "", "", channel="a", version="1"),
        _part("blob", "", "", channel="a", version="2"),
    ]
    deleted = {
        (p.kind, p.checkpoint_ns, p.checkpoint_id, p.version) for p in _older_than_latest(parts)
    }
    assert deleted == {
        ("checkpoint", "", "c1", None),
        ("write", "", "c1", None),
        ("blob", "", "", "1"),
    }
