"""``oncelog serve`` started from another folder, or on another file, keeps the ledger's
history (docs/spec.md §9): the timeline of a channel written before is whole, not ``[]``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oncelog.cli import app
from oncelog.errors import HistoryIncompleteError
from oncelog.net import free_port
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector import process
from oncelog.projector.history_fill import fill_history
from oncelog.projector.store import Store
from oncelog.settings import Settings
from tests.integration.conftest import FAST, start_projector

pytestmark = pytest.mark.kafka

CHANNEL = "refunds"
_ASSIGNED_TIMEOUT_S = 60.0


def _env(topics: Settings, data_dir: Path, port: int, db: Path | None) -> dict[str, str]:
    """``serve``'s environment on these topics: the default DuckDB file unless ``db``."""
    env = process.serve_env(topics.model_copy(update={"http_port": port}))
    env.pop("ONCELOG_DB_PATH")
    env["ONCELOG_DATA_DIR"] = str(data_dir)
    if db is not None:
        env["ONCELOG_DB_PATH"] = str(db)
    return env


@contextmanager
def _serving(topics: Settings, cwd: Path, data_dir: Path, db: Path | None = None) -> Iterator[str]:
    """``oncelog serve`` started in ``cwd``, once it holds its partitions; yields its URL."""
    cwd.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = cwd / "serve.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "oncelog", "serve"],
            cwd=cwd,
            env=_env(topics, data_dir, port, db),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_assigned(proc, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.stop(proc)


def _wait_assigned(proc: subprocess.Popen[bytes], log: Path) -> None:
    """Until ``serve`` reports its partitions assigned (after any restore and refill)."""
    deadline = time.monotonic() + _ASSIGNED_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"serve exited early:\n{log.read_text()[-3000:]}")
        if ": assigned: " in log.read_text():
            return
        time.sleep(0.05)  # polling the log line, bounded by the deadline
    pytest.fail(f"serve held no partition within {_ASSIGNED_TIMEOUT_S} s:\n{log.read_text()}")


def _write_history(topics: Settings) -> int:
    """Nine requests on CHANNEL: three steps claimed and completed, three claimed only."""
    with SyncLedgerClient(topics, timeouts=FAST) as client:
        for step in range(3):
            claim = client.claim_execution(CHANNEL, step=step, tool_name="refund", params={})
            client.complete_execution(claim.execution, claim.claim_token, {"refund": step})
        for step in range(3, 6):
            client.claim_execution(CHANNEL, step=step, tool_name="refund", params={})
    return 9


def _timeline(url: str) -> list[dict[str, object]]:
    answer = CliRunner().invoke(app, ["timeline", CHANNEL, "--url", url, "--json"])
    assert answer.exit_code == 0, answer.output
    rows: list[dict[str, object]] = json.loads(answer.output)
    return rows


def test_serve_from_another_folder_finds_the_same_file(topics: Settings, tmp_path: Path) -> None:
    """The default DuckDB file is absolute (under the data directory, per topic prefix):
    ``serve`` started from two folders folds into one file and answers one timeline."""
    data_dir = tmp_path / "data"
    with _serving(topics, tmp_path / "first", data_dir) as url:
        written = _write_history(topics)
        deadline = time.monotonic() + _ASSIGNED_TIMEOUT_S
        while len(before := _timeline(url)) < written and time.monotonic() < deadline:
            time.sleep(0.05)  # the projector commits a second after it answers
    assert len(before) == written
    with _serving(topics, tmp_path / "second", data_dir) as url:
        assert _timeline(url) == before
    assert not (tmp_path / "second" / "oncelog.duckdb").exists()
    assert (data_dir / "ledgers" / f"{topics.topic_prefix}.duckdb").is_file()


def test_serve_on_a_new_file_refolds_the_history_before_it_answers(
    topics: Settings, tmp_path: Path
) -> None:
    """A new file on a log with history: the partitions restored from the snapshots get
    their requests and versions refolded from the requests topic."""
    data_dir = tmp_path / "data"
    with _serving(topics, tmp_path / "first", data_dir) as url:
        written = _write_history(topics)
        deadline = time.monotonic() + _ASSIGNED_TIMEOUT_S
        while len(before := _timeline(url)) < written and time.monotonic() < deadline:
            time.sleep(0.05)  # the projector commits a second after it answers
    other = tmp_path / "elsewhere" / "other.duckdb"
    with _serving(topics, tmp_path / "second", data_dir, db=other) as url:
        assert _timeline(url) == before
    log = (tmp_path / "second" / "serve.log").read_text()
    assert "history refolded from the requests topic (9 requests" in log
    assert os.path.getsize(other) > 0


def test_verify_fails_with_a_code_on_a_file_without_the_history(
    topics: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file restored from the snapshots has the current states and not the requests
    before them: ``verify`` says so with ``history_incomplete``, and the refill that
    ``serve`` runs on assign makes it whole."""
    assert topics.bootstrap_servers is not None
    store = Store(topics.db_path)
    running = start_projector(topics, store)
    _write_history(topics)
    running.halt()
    store.close()
    for name in ("BOOTSTRAP_SERVERS", "TOPIC_PREFIX", "PARTITIONS"):
        monkeypatch.setenv(f"ONCELOG_{name}", str(getattr(topics, name.lower())))
    runner = CliRunner()
    restored = tmp_path / "restored.duckdb"
    built = runner.invoke(app, ["rebuild", "--from", "executions", "--db", str(restored)])
    assert built.exit_code == 0, built.output
    verified = runner.invoke(app, ["verify", "--db", str(restored)])
    assert verified.exit_code != 0
    assert isinstance(verified.exception, HistoryIncompleteError), verified.output
    assert "oncelog serve --db" in verified.exception.message
    assert "history: partition" in verified.output
    with Store(restored) as gapped:
        ends = {p: pos.next_offset for p, pos in gapped.positions().items()}
        kafka = topics.kafka_config(topics.bootstrap_servers)
        filled = fill_history(topics, kafka, gapped, ends)
    assert sum(filled.requests.values()) == 9
    again = runner.invoke(app, ["verify", "--db", str(restored)])
    assert again.exit_code == 0, again.output
    assert "verify OK" in again.output
    with Store(restored) as whole:  # a second fill finds nothing to do
        assert fill_history(topics, kafka, whole, ends).requests == {}
