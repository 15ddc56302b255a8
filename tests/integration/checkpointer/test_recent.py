"""The saver's own memory: a read after its put needs no hop to ``serve``, and another
writer's checkpoint on the same thread is still read back."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from oncelog.integrations.langgraph import OncelogSaver
from oncelog.net import free_port
from tests.integration.checkpointer.puts import put_values
from tests.served import Served

pytestmark = pytest.mark.kafka

Saver = Callable[..., OncelogSaver]


def test_the_read_after_a_put_is_answered_without_serve(served: Served) -> None:
    nobody = f"http://127.0.0.1:{free_port()}"  # no serve there: any hop would fail
    thread = f"mem-{uuid.uuid4().hex}"
    with OncelogSaver(served.settings, query_url=nobody, timeout_s=5) as saver:
        first = put_values(saver, thread, {"n": 1, "keep": "a"})
        stored = put_values(saver, thread, {"n": 2}, first["configurable"]["checkpoint_id"])
        saver.put_writes(stored, [("n", 3)], task_id="t1")
        latest = saver.get_tuple({"configurable": {"thread_id": thread}})
        named = saver.get_tuple(stored)
        heads = saver.checkpoint_heads(thread, first["configurable"]["checkpoint_id"])
    assert heads == {
        stored["configurable"]["checkpoint_id"]: first["configurable"]["checkpoint_id"]
    }
    assert latest is not None
    assert named is not None
    assert latest.checkpoint["channel_values"] == {"n": 2}
    assert latest.checkpoint["id"] == stored["configurable"]["checkpoint_id"]
    assert latest.parent_config is not None
    assert (
        latest.parent_config["configurable"]["checkpoint_id"]
        == (first["configurable"]["checkpoint_id"])
    )
    assert latest.pending_writes == [("t1", "n", 3)]
    assert named.checkpoint["id"] == latest.checkpoint["id"]


def test_a_second_writer_on_the_thread_is_read_back(make_saver: Saver) -> None:
    first, second = make_saver(), make_saver()  # two producers, as two processes
    thread = f"two-{uuid.uuid4().hex}"
    mine = put_values(first, thread, {"who": "first"})
    assert first.get_tuple({"configurable": {"thread_id": thread}}) is not None
    theirs = put_values(second, thread, {"who": "second"}, mine["configurable"]["checkpoint_id"])
    assert first.checkpoint_heads(thread, mine["configurable"]["checkpoint_id"]) == {
        theirs["configurable"]["checkpoint_id"]: mine["configurable"]["checkpoint_id"]
    }
    latest = first.get_tuple({"configurable": {"thread_id": thread}})
    assert latest is not None
    assert latest.checkpoint["id"] == theirs["configurable"]["checkpoint_id"]
    assert latest.checkpoint["channel_values"] == {"who": "second"}
    # And the first writer's next put is again its own memory's latest.
    again = put_values(first, thread, {"who": "first again"}, latest.checkpoint["id"])
    back = first.get_tuple({"configurable": {"thread_id": thread}})
    assert back is not None
    assert back.checkpoint["id"] == again["configurable"]["checkpoint_id"]


def test_a_deleted_thread_is_not_answered_from_memory(make_saver: Saver) -> None:
    saver = make_saver()
    thread = f"gone-{uuid.uuid4().hex}"
    put_values(saver, thread, {"n": 1})
    saver.delete_thread(thread)
    assert saver.get_tuple({"configurable": {"thread_id": thread}}) is None
