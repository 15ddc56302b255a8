"""OncelogSaver on a real broker and a real ``oncelog serve``: own writes, size, deletion."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable

import pytest

from oncelog.errors import (
    BrokerUnreachableError,
    CheckpointTooLargeError,
    InvalidArgumentError,
    ServeUnreachableError,
)
from oncelog.integrations.langgraph import OncelogSaver, wire
from oncelog.kafka.reader import topic_ends
from oncelog.net import free_port
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.query.catch_up import wait_until_folded
from oncelog.query.source import HttpSource
from oncelog.schemas.checkpoint_parts import PART_BYTES
from tests.integration.checkpointer.puts import put_values, stored_parts
from tests.served import Served

pytestmark = pytest.mark.kafka

Saver = Callable[..., OncelogSaver]


def test_a_saver_reads_its_own_writes_at_once(make_saver: Saver) -> None:
    saver = make_saver()
    thread = f"own-{uuid.uuid4().hex}"
    parent = None
    for step in range(20):
        stored = put_values(saver, thread, {"n": step}, parent)
        parent = stored["configurable"]["checkpoint_id"]
        latest = saver.get_tuple({"configurable": {"thread_id": thread}})
        assert latest is not None  # no wait in between: the read named the put's position
        assert latest.checkpoint["channel_values"] == {"n": step}
        assert latest.config["configurable"]["checkpoint_id"] == parent


def test_another_saver_sees_them_once_it_names_nothing(make_saver: Saver) -> None:
    writer, reader = make_saver(), make_saver()
    thread = f"other-{uuid.uuid4().hex}"
    put_values(writer, thread, {"x": 1})
    # The reader never wrote: it names no position and may read before the fold. It
    # sees the checkpoint after a listing of the writer's (which waits on its position;
    # its get_tuple may answer from its memory).
    assert next(writer.list({"configurable": {"thread_id": thread}}), None) is not None
    seen = reader.get_tuple({"configurable": {"thread_id": thread}})
    assert seen is not None
    assert seen.checkpoint["channel_values"] == {"x": 1}


def test_a_state_of_5_mb_is_written_in_parts_and_read_back_whole(
    make_saver: Saver, served: Served
) -> None:
    saver = make_saver()
    thread = f"big-{uuid.uuid4().hex}"
    state = os.urandom(5 * 1024 * 1024 + 17)
    put_values(saver, thread, {"blob": state, "small": "s"})
    tup = saver.get_tuple({"configurable": {"thread_id": thread}})
    assert tup is not None
    assert tup.checkpoint["channel_values"]["blob"] == state
    # The listing reads from serve (get_tuple may answer from the saver's memory): folded.
    (listed,) = saver.list({"configurable": {"thread_id": thread}})
    assert listed.checkpoint["channel_values"]["blob"] == state
    blob_parts = [p for p in stored_parts(served, thread) if p["channel"] == "blob"]
    assert len(blob_parts) == len(state) // PART_BYTES + 1 == 6
    assert {p["parts"] for p in blob_parts} == {6}


def test_a_value_over_the_limit_is_refused_before_anything_is_written(
    make_saver: Saver, served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wire, "MAX_VALUE_BYTES", 1024)
    saver = make_saver()
    thread = f"huge-{uuid.uuid4().hex}"
    with pytest.raises(CheckpointTooLargeError, match=r"channel 'blob' of thread .* over") as err:
        put_values(saver, thread, {"blob": b"x" * 2048, "ok": 1})
    assert err.value.code == "checkpoint_too_large"
    put_values(saver, f"{thread}-marker", {"ok": 1})  # a later write of this saver, folded
    assert saver.get_tuple({"configurable": {"thread_id": f"{thread}-marker"}}) is not None
    assert stored_parts(served, thread) == []  # not even the small channel of the refused put


def test_deleting_a_thread_deletes_its_checkpoints_and_never_its_executions(
    make_saver: Saver, served: Served
) -> None:
    thread = f"del-{uuid.uuid4().hex}"
    with SyncLedgerClient(served.settings, timeouts=Timeouts(60, 5)) as client:
        claim = client.claim_execution(thread, step=1, tool_name="charge", params={"a": 1})
        client.complete_execution(claim.execution, claim.claim_token, {"charged": True})
    saver = make_saver()
    first = put_values(saver, thread, {"n": 1})
    put_values(saver, thread, {"n": 2}, first["configurable"]["checkpoint_id"])
    saver.put_writes(first, [("n", 3)], "task-1")
    assert len(list(saver.list({"configurable": {"thread_id": thread}}))) == 2

    saver.delete_thread(thread)
    assert saver.get_tuple({"configurable": {"thread_id": thread}}) is None
    assert list(saver.list({"configurable": {"thread_id": thread}})) == []
    assert stored_parts(served, thread) == []
    source = HttpSource(served.url)
    # The completion's decision came before the projector's commit: wait for the fold.
    settings = served.settings
    assert settings.bootstrap_servers is not None
    kafka = settings.kafka_config(settings.bootstrap_servers)
    wait_until_folded(source, topic_ends(kafka, settings.requests_topic), timeout_s=60)
    status = source.status(thread, "1", None)
    assert (status.status, status.result) == ("completed", {"charged": True})


def test_no_broker_is_a_typed_error_naming_the_address(served: Served) -> None:
    address = f"127.0.0.1:{free_port()}"
    settings = served.settings.model_copy(update={"bootstrap_servers": address})
    with pytest.raises(BrokerUnreachableError, match=address) as err:
        OncelogSaver(settings, query_url=served.url, timeout_s=2)
    assert err.value.code == "broker_unreachable"


def test_no_serve_is_a_typed_error_naming_the_url(served: Served) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with (
        OncelogSaver(served.settings, query_url=url, timeout_s=2) as saver,
        pytest.raises(ServeUnreachableError, match=url) as err,
    ):
        saver.get_tuple({"configurable": {"thread_id": "t"}})
    assert err.value.code == "serve_unreachable"


@pytest.mark.parametrize("thread", ["a/b", ".", ".."])
def test_a_thread_id_no_url_can_carry_is_refused_before_any_write(
    make_saver: Saver, thread: str
) -> None:
    saver = make_saver()
    with pytest.raises(InvalidArgumentError, match="URL path") as err:
        put_values(saver, thread, {"x": 1})
    assert err.value.code == "invalid_argument"
