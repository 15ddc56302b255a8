"""The refold pool's process plumbing, without a broker: a worker that ends early."""

from __future__ import annotations

import io
import json
import queue
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb
import pytest

from oncelog.errors import ConfigError
from oncelog.projector import refold_pool


def _job(tmp_path: Path) -> dict[str, Any]:
    # librdkafka refuses the property at once: the worker fails before any connection.
    return {"kafka": {"bootstrap.servers": "127.0.0.1:1", "no.such.property": "1"},
            "topic": "t.requests", "partitions": [0], "partition_count": 1,
            "scratch": str(tmp_path), "chunk": 10}  # fmt: skip


def test_a_worker_reports_its_failure_then_its_end_and_a_late_grant_is_harmless(
    tmp_path: Path,
) -> None:
    messages: queue.Queue[Any] = queue.Queue()
    worker = refold_pool._Worker(0, json.dumps(_job(tmp_path)).encode(), messages)
    try:
        first = messages.get(timeout=60)
        last = messages.get(timeout=60)
        assert first[0] == 0
        assert "no.such.property" in first[1]["failed"]
        assert last == (0, {"eof": True})
        assert worker.proc.wait(60) == 0
        worker.grant()  # the worker has ended: a slot for it is dropped, not an error
    finally:
        worker.stop()
    assert worker.proc.returncode == 0


def test_kafka_settings_that_are_not_json_are_refused_before_any_process_starts(
    tmp_path: Path,
) -> None:
    kafka = {"bootstrap.servers": "127.0.0.1:1", "error_cb": print}
    with pytest.raises(ConfigError, match="workers=1"), duckdb.connect() as con:
        refold_pool.refold_in_processes(
            kafka, "t.requests", [0, 1], 2, con, workers=2, scratch_in=tmp_path
        )
    assert list(tmp_path.iterdir()) == []  # its scratch folder is gone too


def test_an_unreadable_line_fails_the_refold_and_the_end_is_always_reported() -> None:
    reader = object.__new__(refold_pool._Worker)  # only its reading half
    reader.index = 3
    reader.proc = SimpleNamespace(stdout=io.BytesIO(b'{"progress": 0, "records": 5}\nnot json\n'))  # type: ignore[assignment]
    messages: queue.Queue[Any] = queue.Queue()
    reader._read(messages)
    got = [messages.get_nowait() for _ in range(messages.qsize())]
    assert got[0] == (3, {"progress": 0, "records": 5})
    assert got[1][0] == 3
    assert "unreadable line" in got[1][1]["failed"]
    assert got[2] == (3, {"eof": True})


def test_a_chunk_that_cannot_be_committed_fails_the_refold_instead_of_waiting(
    tmp_path: Path,
) -> None:
    # The worker waits for a grant that never comes: only the commit thread's report
    # can wake the writer, which would otherwise wait on the messages for ever.
    worker = object.__new__(refold_pool._Worker)
    worker.index = 0
    granted: list[int] = []
    worker.grant = lambda: granted.append(1)  # type: ignore[method-assign]
    messages: queue.Queue[Any] = queue.Queue()
    missing = str(tmp_path / "gone.arrow")
    messages.put((0, {"chunk": 0, "paths": {"_bulk_history": missing}}))
    outcome: list[BaseException] = []

    def write() -> None:
        with duckdb.connect() as con:
            try:
                refold_pool._write_all(con, "t.requests", [worker], messages, progress=None)
            except BaseException as exc:  # handed to the test's thread
                outcome.append(exc)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    writer.join(timeout=30)
    assert not writer.is_alive(), "the writer still waits for a chunk that failed"
    assert len(outcome) == 1
    assert isinstance(outcome[0], FileNotFoundError)
    assert granted == []
