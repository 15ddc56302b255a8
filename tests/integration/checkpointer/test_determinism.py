"""The checkpoints' rows depend on the log alone: verify and rebuild agree with serve's.

Real broker, real ``oncelog serve`` (stopped before the checks: DuckDB has one writer).
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointMetadata, empty_checkpoint
from typer.testing import CliRunner

from oncelog.cli import app
from oncelog.integrations.langgraph import OncelogSaver
from oncelog.projector.checkpoint_verify import rows
from oncelog.projector.store import Store
from tests.served import serving

pytestmark = pytest.mark.kafka


def _put(saver: OncelogSaver, thread: str, step: int, parent: RunnableConfig | None) -> Any:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"step": step, "blob": os.urandom(1_500_000 if step else 10)}
    checkpoint["channel_versions"] = {k: saver.get_next_version(None, None) for k in ("step",
                                      "blob")}  # fmt: skip
    conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if parent is not None:
        conf["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
    meta = CheckpointMetadata(step=step, run_id=f"{thread}-run-{step}")
    stored = saver.put(RunnableConfig(configurable=conf), checkpoint, meta,
                       checkpoint["channel_versions"])  # fmt: skip
    saver.put_writes(stored, [("step", step + 1), ("other", "x")], f"task-{step}")
    return stored


def _write_history(saver: OncelogSaver) -> list[str]:
    """Threads with multi-part values, writes, one deleted, one pruned, one run deleted."""
    threads = [f"det-{n}-{uuid.uuid4().hex[:6]}" for n in range(5)]
    for thread in threads:
        parent = None
        for step in range(3):
            parent = _put(saver, thread, step, parent)
    saver.delete_thread(threads[0])
    saver.prune([threads[1]], strategy="keep_latest")
    saver.delete_for_runs([f"{threads[2]}-run-1"])
    saver.copy_thread(threads[3], f"{threads[3]}-copy")
    # A read over every thread names every position written: it returns once all is folded.
    assert len(list(saver.list(None, limit=1))) == 1
    return threads


def test_verify_passes_and_a_rebuild_gives_the_live_rows_byte_for_byte(
    bootstrap: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving(bootstrap, tmp_path) as served:
        with OncelogSaver(served.settings, query_url=served.url) as saver:
            threads = _write_history(saver)
        settings = served.settings
    live_db = settings.db_path
    with Store(live_db, read_only=True) as live:
        live_rows = rows(live, range(settings.partitions))
    assert {r[5] for r in live_rows.values()} >= {*threads[1:], f"{threads[3]}-copy"}
    assert threads[0] not in {r[5] for r in live_rows.values()}  # deleted
    assert any(r[20] > 1 for r in live_rows.values())  # values in several parts

    assert settings.bootstrap_servers is not None
    for name, value in {
        "ONCELOG_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "ONCELOG_TOPIC_PREFIX": settings.topic_prefix,
        "ONCELOG_PARTITIONS": str(settings.partitions),
    }.items():
        monkeypatch.setenv(name, value)
    runner = CliRunner()
    verified = runner.invoke(app, ["verify", "--db", str(live_db), "--json"])
    assert verified.exit_code == 0, verified.output
    report = json.loads(verified.output.strip().splitlines()[-1])
    assert report["ok"], report["differences"]
    assert report["compared_checkpoints"] == len(live_rows)

    rebuilt_db = tmp_path / "rebuilt.duckdb"
    built = runner.invoke(app, ["rebuild", "--from", "requests", "--db", str(rebuilt_db)])
    assert built.exit_code == 0, built.output
    assert "checkpoint records into" in built.output
    with Store(rebuilt_db, read_only=True) as rebuilt:
        assert rows(rebuilt, range(settings.partitions)) == live_rows
