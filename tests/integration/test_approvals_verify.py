"""A log with approvals verifies, and rebuilds both ways to the live state (issue 45:
determinism holds across intents and decisions), on a real broker."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from oncelog.errors import ApprovalDeniedError, ConflictError
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.store import Store
from oncelog.schemas.models import ApprovalPolicy
from oncelog.settings import Settings
from tests.integration.conftest import FAST, start_projector
from tests.integration.test_rebuild_cli import _point_cli_at, verifies_and_rebuilds

pytestmark = pytest.mark.kafka

POLICY = ApprovalPolicy(timeout_ms=600_000)


def _approved_and_denied(topics: Settings) -> None:
    """One refund asked, approved, claimed by a new process and completed; one denied."""
    with SyncLedgerClient(topics, timeouts=FAST, worker_id="agent") as agent:
        asks = {
            key: agent.claim_execution("refunds", key, tool_name="refund",
                                       params={"amount_cents": cents}, approval=POLICY)
            for key, cents in (("r-1", 25_000), ("r-2", 40_000))
        }  # fmt: skip
        assert {c.status for c in asks.values()} == {"awaiting_approval"}
    with SyncLedgerClient(topics, timeouts=FAST, worker_id="desk") as desk:
        desk.decide_approval("refunds", "r-1", approver="ann", approve=True,
                             request_hash=asks["r-1"].execution.request_hash)  # fmt: skip
        desk.decide_approval("refunds", "r-2", approver="ann", approve=False, reason="no",
                             request_hash=asks["r-2"].execution.request_hash)  # fmt: skip
    with SyncLedgerClient(topics, timeouts=FAST, worker_id="agent-restarted") as agent:
        with pytest.raises(ConflictError):
            agent.claim_execution("refunds", "r-1", tool_name="refund",
                                  params={"amount_cents": 99_000}, approval=POLICY)  # fmt: skip
        claim = agent.claim_execution("refunds", "r-1", tool_name="refund",
                                      params={"amount_cents": 25_000}, approval=POLICY)  # fmt: skip
        assert claim.status == "claimed"
        agent.complete_execution(claim.execution, claim.claim_token, {"refunded": 25_000})
        with pytest.raises(ApprovalDeniedError, match="by ann: no"):
            agent.claim_execution("refunds", "r-2", tool_name="refund",
                                  params={"amount_cents": 40_000}, approval=POLICY)  # fmt: skip


def test_a_log_with_approvals_verifies_and_rebuilds_to_the_live_state(
    topics: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = tmp_path / "live.duckdb"
    store = Store(live)
    running = start_projector(topics, store)
    _approved_and_denied(topics)
    running.halt()
    store.close()
    _point_cli_at(topics, monkeypatch)
    verifies_and_rebuilds(CliRunner(), live, tmp_path)
