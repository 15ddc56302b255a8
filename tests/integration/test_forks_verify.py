"""A log with forks and adoptions verifies, and rebuilds both ways to the live state
(issue 29: determinism holds across forks)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.store import Store
from oncelog.settings import Settings
from tests.integration.conftest import FAST, start_projector
from tests.integration.test_rebuild_cli import _point_cli_at, verifies_and_rebuilds

pytestmark = pytest.mark.kafka


def _forked_log(client: SyncLedgerClient) -> None:
    """A parent with three steps, a fork after two, the third adopted, and a fork's own run."""
    for i in range(3):
        claim = client.claim_execution("order-7", f"step-{i}", tool_name="t", params={"i": i})
        client.complete_execution(claim.execution, claim.claim_token, {"done": i})
    second = client.channel_executions("order-7")[1].position
    assert second is not None
    at = second[1]  # the parent's offset of step-1's completion
    fork = client.fork_channel("order-7", "order-7~b", at=at)
    assert [e.key_name for e in fork.inherited] == ["step-0", "step-1"]
    adopted = client.adopt_execution(
        "order-7~b", "step-2", tool_name="t", params={"i": 2}, from_channels=["order-7"]
    )
    assert adopted is not None
    assert adopted.inherited is not None
    assert adopted.inherited.adopted
    again = client.fork_channel("order-7", "order-7~b", at=at)
    assert [(e.id, e.result, e.inherited, e.completed_at_ms) for e in again.inherited] == [
        (e.id, e.result, e.inherited, e.completed_at_ms) for e in fork.inherited
    ]  # idempotent: the same inheritance, no new version
    own = client.claim_execution("order-7~b", "step-3", tool_name="t", params={"i": 3})
    client.complete_execution(own.execution, own.claim_token, {"done": 3})


def test_a_log_with_forks_verifies_and_rebuilds_to_the_live_state(
    topics: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = tmp_path / "live.duckdb"
    store = Store(live)
    running = start_projector(topics, store)
    with SyncLedgerClient(topics, timeouts=FAST) as client:
        _forked_log(client)
    running.halt()
    store.close()
    _point_cli_at(topics, monkeypatch)
    verifies_and_rebuilds(CliRunner(), live, tmp_path)
