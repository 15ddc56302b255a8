"""OncelogSaver past one page of the query API, at the size limit, and naming its writes on
the every-thread listing (real broker and ``oncelog serve``; issue 41's mutation audit)."""

from __future__ import annotations

import json
import threading
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointMetadata

from oncelog.errors import CheckpointTooLargeError
from oncelog.integrations.langgraph import OncelogSaver, wire
from oncelog.integrations.langgraph.saver import PAGE
from tests.integration.checkpointer.puts import put_values, stored_parts
from tests.served import Served

pytestmark = pytest.mark.kafka

Saver = Callable[..., OncelogSaver]
MORE_THAN_A_PAGE = PAGE + 3


def _put(
    saver: OncelogSaver,
    thread: str,
    values: dict[str, Any],
    parent: str | None = None,
    run_id: str | None = None,
) -> RunnableConfig:
    metadata = CheckpointMetadata() if run_id is None else CheckpointMetadata(run_id=run_id)
    return put_values(saver, thread, values, parent, metadata)


def _part_count(served: Served, thread: str) -> int:
    return len(stored_parts(served, thread))


def _thread(thread: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread}}


def _wide(saver: OncelogSaver, served: Served, thread: str) -> dict[str, int]:
    """A checkpoint of more channels than a page of parts holds; its values."""
    values = {f"c{n:04}": n for n in range(MORE_THAN_A_PAGE)}  # one part per channel
    _put(saver, thread, values)
    # A listing goes to serve, naming the saver's own writes: folded since (get_tuple
    # may answer from the saver's memory).
    assert next(saver.list(_thread(thread)), None) is not None
    assert _part_count(served, thread) == MORE_THAN_A_PAGE + 1  # and the checkpoint's
    return values


def test_copy_thread_copies_every_part_past_one_page(make_saver: Saver, served: Served) -> None:
    saver = make_saver()
    source, target = f"wide-{uuid.uuid4().hex}", f"wide-copy-{uuid.uuid4().hex}"
    values = _wide(saver, served, source)
    saver.copy_thread(source, target)
    copied = saver.get_tuple(_thread(target))
    assert copied is not None
    assert copied.checkpoint["channel_values"] == values


def test_delete_thread_deletes_every_part_past_one_page(make_saver: Saver, served: Served) -> None:
    saver = make_saver()
    thread = f"wide-{uuid.uuid4().hex}"
    _wide(saver, served, thread)
    saver.delete_thread(thread)
    assert saver.get_tuple(_thread(thread)) is None  # folded up to the tombstones
    assert _part_count(served, thread) == 0


def test_prune_keeps_only_the_latest_past_one_page(make_saver: Saver, served: Served) -> None:
    saver = make_saver()
    thread = f"wide-{uuid.uuid4().hex}"
    _wide(saver, served, thread)
    first = saver.get_tuple(_thread(thread))
    assert first is not None
    _put(saver, thread, {"z": 1}, first.config["configurable"]["checkpoint_id"])
    saver.prune([thread])
    assert [t.checkpoint["channel_values"] for t in saver.list(_thread(thread))] == [{"z": 1}]
    assert _part_count(served, thread) == 2  # the latest checkpoint and the value it names


def test_delete_for_runs_deletes_every_write_past_one_page(
    make_saver: Saver, served: Served
) -> None:
    saver = make_saver()
    thread, run = f"writes-{uuid.uuid4().hex}", f"run-{uuid.uuid4().hex}"
    stored = _put(saver, thread, {}, run_id=run)
    saver.put_writes(stored, [(f"c{n:04}", n) for n in range(MORE_THAN_A_PAGE)], "task-1")
    assert next(saver.list(_thread(thread)), None) is not None  # from serve: folded
    assert _part_count(served, thread) == MORE_THAN_A_PAGE + 1
    saver.delete_for_runs([run])
    assert saver.get_tuple(_thread(thread)) is None
    assert _part_count(served, thread) == 0


def test_a_thread_lists_every_checkpoint_past_one_page(make_saver: Saver) -> None:
    saver = make_saver()
    thread = f"long-{uuid.uuid4().hex}"
    parent = None
    for _ in range(MORE_THAN_A_PAGE):
        parent = _put(saver, thread, {}, parent)["configurable"]["checkpoint_id"]
    listed = [t.config["configurable"]["checkpoint_id"] for t in saver.list(_thread(thread))]
    assert len(listed) == MORE_THAN_A_PAGE
    assert listed[0] == parent  # newest first
    first = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_id": listed[-1]}})
    assert first is not None
    assert first.parent_config is None  # the oldest is the thread's first


def test_a_value_of_exactly_the_limit_is_written(
    make_saver: Saver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wire, "MAX_VALUE_BYTES", 1024)
    saver = make_saver()
    thread = f"edge-{uuid.uuid4().hex}"
    _put(saver, thread, {"blob": b"x" * 1024})  # the serde keeps bytes as they are
    stored = saver.get_tuple(_thread(thread))
    assert stored is not None
    assert stored.checkpoint["channel_values"] == {"blob": b"x" * 1024}
    with pytest.raises(CheckpointTooLargeError):
        _put(saver, thread, {"blob": b"x" * 1025})


class _Recorder(BaseHTTPRequestHandler):
    """A query API that answers every listing empty, and keeps what it was asked."""

    asked: list[tuple[str, dict[str, list[str]]]]

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        self.asked.append((url.path, urllib.parse.parse_qs(url.query)))
        body = json.dumps({"items": [], "truncated": False}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def _recording() -> Iterator[tuple[str, list[tuple[str, dict[str, list[str]]]]]]:
    asked: list[tuple[str, dict[str, list[str]]]] = []
    handler = type("Recorder", (_Recorder,), {"asked": asked})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", asked
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_the_every_thread_listing_names_the_savers_writes(served: Served) -> None:
    # What makes a read see the saver's own writes is the position it names (``after``):
    # the serving instance answers once it folded that far. Asked of a recording server,
    # so that the answer cannot come from a fold that happened to be quick.
    with _recording() as (url, asked), OncelogSaver(served.settings, query_url=url) as saver:
        thread = f"ryw-{uuid.uuid4().hex}"
        _put(saver, thread, {"n": 1})
        list(saver.list(_thread(thread), limit=1))  # get_tuple may answer from memory
        list(saver.list(None))
    (one_thread, every_thread) = asked
    assert one_thread[0] == f"/v1/checkpoints/{thread}"
    assert every_thread[0] == "/v1/checkpoints"
    (position,) = one_thread[1]["after"]  # "partition:offset" after the put
    assert position in every_thread[1].get("after", [""])[0].split(",")
