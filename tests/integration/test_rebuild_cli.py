"""`oncelog rebuild` and `oncelog verify` from the command line, on a stopped projector."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from oncelog.cli import app
from oncelog.errors import VerifyIncompleteError
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.store import Store
from oncelog.settings import Settings
from tests.integration.conftest import FAST, start_projector

pytestmark = pytest.mark.kafka


def _point_cli_at(topics: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI reads its settings from the environment: point it at these topics."""
    assert topics.bootstrap_servers is not None
    monkeypatch.setenv("ONCELOG_BOOTSTRAP_SERVERS", topics.bootstrap_servers)
    monkeypatch.setenv("ONCELOG_TOPIC_PREFIX", topics.topic_prefix)
    monkeypatch.setenv("ONCELOG_PARTITIONS", str(topics.partitions))


def verifies_and_rebuilds(runner: CliRunner, live: Path, tmp_path: Path) -> str:
    """``verify`` passes on ``live``, and a rebuild from either topic equals its current
    states; returns what ``verify`` printed."""
    verified = runner.invoke(app, ["verify", "--db", str(live)])
    assert verified.exit_code == 0, verified.output
    assert "verify OK" in verified.output
    for source in ("requests", "executions"):
        target = tmp_path / f"from-{source}.duckdb"
        built = runner.invoke(app, ["rebuild", "--from", source, "--db", str(target)])
        assert built.exit_code == 0, built.output
        with Store(target, read_only=True) as rebuilt, Store(live, read_only=True) as original:
            assert rebuilt.current_states() == original.current_states()
    return verified.output


def test_rebuild_both_ways_and_verify(
    topics: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert topics.bootstrap_servers is not None
    live = tmp_path / "live.duckdb"
    store = Store(live)
    running = start_projector(topics, store)
    with SyncLedgerClient(topics, timeouts=FAST) as client:
        for i in range(12):
            claim = client.claim_execution(f"run-{i % 4}", step=i, tool_name="t", params={"i": i})
            if i % 3:
                client.complete_execution(claim.execution, claim.claim_token, i)
    running.halt()
    store.close()
    _point_cli_at(topics, monkeypatch)
    runner = CliRunner()
    assert "live: 12 compared" in verifies_and_rebuilds(runner, live, tmp_path)
    again = runner.invoke(app, ["rebuild", "--from", "requests", "--db", str(live)])
    assert again.exit_code != 0  # it never overwrites a projection


def test_rebuild_and_verify_one_shard(
    topics: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``rebuild --partition`` builds a shard; ``verify`` compares only what a file holds."""
    assert topics.bootstrap_servers is not None
    live = tmp_path / "live.duckdb"
    store = Store(live)
    running = start_projector(topics, store)
    with SyncLedgerClient(topics, timeouts=FAST) as client:
        for i in range(12):
            claim = client.claim_execution(f"run-{i}", step=0, tool_name="t", params={})
            client.complete_execution(claim.execution, claim.claim_token, i)
    running.halt()
    shard = {p for p in store.positions() if store.current_states(p)}
    store.close()
    assert len(shard) > 1
    _point_cli_at(topics, monkeypatch)
    runner = CliRunner()
    one = min(shard)
    target = tmp_path / "shard.duckdb"
    # From requests last: verify then compares a whole history (a restore has none).
    for source in ("executions", "requests"):
        target.unlink(missing_ok=True)
        args = ["rebuild", "--from", source, "--db", str(target), "--partition", str(one)]
        built = runner.invoke(app, args)
        assert built.exit_code == 0, built.output
        with Store(target, read_only=True) as rebuilt, Store(live, read_only=True) as whole:
            assert set(rebuilt.positions()) == {one}
            assert rebuilt.current_states() == whole.current_states(one)
    verified = runner.invoke(app, ["verify", "--db", str(target)])
    assert verified.exit_code == 0, verified.output
    with Store(target, read_only=True) as rebuilt:
        assert f"live: {len(rebuilt.current_states())} compared" in verified.output
    with duckdb.connect(str(target)) as con:  # one operation of the shard goes missing
        con.execute("DELETE FROM executions WHERE operation_id IN (SELECT min(operation_id) "
                    "FROM executions)")  # fmt: skip
    tampered = runner.invoke(app, ["verify", "--db", str(target)])
    assert tampered.exit_code == 1
    assert "live: operation" in tampered.output
    assert "missing" in tampered.output
    wrong = runner.invoke(app, ["rebuild", "--from", "requests", "--db", str(tmp_path / "x.duckdb"),
                                "--partition", str(topics.partitions)])  # fmt: skip
    assert wrong.exit_code != 0


_HOLD = """
import sys, duckdb
con = duckdb.connect(sys.argv[1])  # read-write, as `oncelog serve` holds its file
print("holding", flush=True)
sys.stdin.read()
"""


def test_verify_fails_with_a_code_when_it_cannot_compare_the_file_it_was_given(
    topics: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _point_cli_at(topics, monkeypatch)
    runner = CliRunner()
    missing = runner.invoke(app, ["verify", "--db", str(tmp_path / "none.duckdb")])
    assert isinstance(missing.exception, VerifyIncompleteError)
    assert missing.exception.code == "verify_incomplete"
    assert "--snapshots-only" in missing.exception.message
    held = tmp_path / "held.duckdb"
    Store(held).close()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(held)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == b"holding\n"  # it holds the file now
        locked = runner.invoke(app, ["verify", "--db", str(held)])
    finally:
        holder.communicate(b"", timeout=30)
    assert isinstance(locked.exception, VerifyIncompleteError), locked.output
    assert str(held) in locked.exception.message
    assert "oncelog serve" in locked.exception.message
    assert "--snapshots-only" in locked.exception.message
    snapshots = runner.invoke(app, ["verify", "--db", str(held), "--snapshots-only"])
    assert snapshots.exit_code == 0, snapshots.output
    assert "live: skipped" in snapshots.output
