"""``rebuild`` and ``verify`` draw a progress bar on a terminal and nothing when piped.

Both run as child processes, as a person or a script runs them: once with pipes
(the output is exactly the result lines: no carriage return, no escape sequence,
no bar), once on a pseudo-terminal (the bar is drawn on it), once there with
``--json`` (one JSON document, no bar).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.store import Store
from oncelog.settings import Settings
from tests.integration.conftest import FAST, start_projector

pytestmark = pytest.mark.kafka

REQUESTS = 24  # 12 claims, 12 completions
NOISE = ("\r", "\x1b", "━", "records/s")
_READ_TIMEOUT_S = 120.0


def _cli_env(topics: Settings) -> dict[str, str]:
    assert topics.bootstrap_servers is not None
    return {
        **os.environ,
        "ONCELOG_BOOTSTRAP_SERVERS": topics.bootstrap_servers,
        "ONCELOG_TOPIC_PREFIX": topics.topic_prefix,
        "ONCELOG_PARTITIONS": str(topics.partitions),
        "COLUMNS": "120",
    }


def _piped(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oncelog", *args], env=env, capture_output=True, text=True,
        timeout=_READ_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def _on_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run the CLI with stdout and stderr on a pseudo-terminal; (exit code, what it drew)."""
    master, slave = os.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "oncelog", *args], env=env, stdin=subprocess.DEVNULL,
        stdout=slave, stderr=slave,
    )  # fmt: skip
    os.close(slave)
    drawn = bytearray()
    deadline = time.monotonic() + _READ_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], deadline - time.monotonic())
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal (it exited)
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(master)
    return proc.wait(timeout=_READ_TIMEOUT_S), drawn.decode(errors="replace")


@pytest.fixture
def live(topics: Settings, tmp_path: Path) -> Path:
    """A stopped projector's DuckDB file over 24 requests."""
    path = tmp_path / "live.duckdb"
    store = Store(path)
    running = start_projector(topics, store)
    with SyncLedgerClient(topics, timeouts=FAST) as client:
        for i in range(REQUESTS // 2):
            claim = client.claim_execution(f"run-{i % 4}", step=i, tool_name="t", params={"i": i})
            client.complete_execution(claim.execution, claim.claim_token, i)
    running.halt()
    store.close()
    return path


def test_rebuild_piped_prints_only_its_result_and_draws_a_bar_on_a_terminal(
    topics: Settings, live: Path, tmp_path: Path
) -> None:
    env = _cli_env(topics)
    piped_db = tmp_path / "piped.duckdb"
    piped = _piped(["rebuild", "--from", "requests", "--db", str(piped_db)], env)
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == f"refolded {REQUESTS} requests into {piped_db}\n"
    assert piped.stderr == ""
    tty_db = tmp_path / "tty.duckdb"
    code, drawn = _on_terminal(["rebuild", "--from", "requests", "--db", str(tty_db)], env)
    assert code == 0, drawn
    assert "refolding" in drawn
    assert f"{REQUESTS}/{REQUESTS}" in drawn
    assert "records/s" in drawn
    assert "ETA" in drawn
    assert "\x1b[" in drawn  # drawn, with cursor control, on the terminal
    assert f"refolded {REQUESTS} requests into {tty_db}" in drawn
    json_db = tmp_path / "json.duckdb"
    code, drawn = _on_terminal(
        ["rebuild", "--from", "requests", "--db", str(json_db), "--json"], env
    )
    assert code == 0, drawn
    assert json.loads(drawn) == {
        "refolded": REQUESTS,
        "checkpoint_records": 0,  # no LangGraph saver wrote to this ledger
        "db_path": str(json_db),
    }


def test_verify_piped_prints_only_its_report_and_draws_a_bar_on_a_terminal(
    topics: Settings, live: Path
) -> None:
    env = _cli_env(topics)
    piped = _piped(["verify", "--db", str(live)], env)
    assert piped.returncode == 0, piped.stdout + piped.stderr
    assert piped.stdout.splitlines() == [
        f"refolded {REQUESTS} requests; snapshots: 12 compared; live: 12 compared; differences: 0",
        "verify OK",
    ]
    assert piped.stderr == ""
    assert not any(mark in piped.stdout for mark in NOISE)
    code, drawn = _on_terminal(["verify", "--db", str(live)], env)
    assert code == 0, drawn
    assert "verifying" in drawn
    assert "records/s" in drawn
    assert "verify OK" in drawn
    code, drawn = _on_terminal(["verify", "--db", str(live), "--json"], env)
    assert code == 0, drawn
    report = json.loads(drawn)
    assert (report["ok"], report["refolded"], report["compared_live"]) == (True, REQUESTS, 12)
