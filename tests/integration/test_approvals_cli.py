"""`oncelog approvals approve | deny` (and `list`) on a real broker and projector."""

from __future__ import annotations

import base64
import json
import time

import pytest
from typer.testing import CliRunner, Result

from oncelog.cli import app
from oncelog.errors import ApprovalDeniedError, ApprovalRefusedError, InvalidArgumentError
from oncelog.identity.approver_signature import new_private_key, public_key_of
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.query.approvals import pending_approvals
from oncelog.query.models import PendingApproval
from oncelog.schemas.models import ApprovalPolicy
from oncelog.settings import Settings
from oncelog.waiting import poll_until
from tests.integration.conftest import FAST, RunningProjector
from tests.integration.test_rebuild_cli import _point_cli_at

pytestmark = pytest.mark.kafka

POLICY = ApprovalPolicy(timeout_ms=3_600_000)


def _listed(projector: RunningProjector, key: str) -> PendingApproval | None:
    """The pending intent of ``key`` once the projector committed it (bounded wait)."""

    def find() -> PendingApproval | None:
        cursor = projector.store.cursor()
        try:
            return next((p for p in pending_approvals(cursor, 100) if p.key_name == key), None)
        finally:
            cursor.close()

    return poll_until(time.monotonic() + 20, find)


def test_the_cli_lists_approves_and_denies_intents(
    topics: Settings, projector: RunningProjector, monkeypatch: pytest.MonkeyPatch
) -> None:
    _point_cli_at(topics, monkeypatch)
    runner = CliRunner()
    with SyncLedgerClient(topics, worker_id="agent", timeouts=FAST) as agent:

        def claim(key: str, cents: int) -> str:
            params = {"order": key, "amount_cents": cents}
            answer = agent.claim_execution(
                "run-r", key, tool_name="refund", params=params, approval=POLICY
            )
            return answer.status

        assert claim("big", 25_000) == "awaiting_approval"
        assert claim("bad", 40_000) == "awaiting_approval"
        big = _listed(projector, "big")
        assert big is not None
        assert big.request_hash is not None
        assert big.tool_name == "refund"
        assert big.params == {"order": "big", "amount_cents": 25_000}  # what is approved
        assert big.deadline_ms == big.requested_at_ms + POLICY.timeout_ms

        approved = runner.invoke(
            app,
            ["approvals", "approve", "run-r", "big", "--approver", "ann",
             "--request-hash", big.request_hash],
        )  # fmt: skip
        assert approved.exit_code == 0, approved.output
        assert claim("big", 25_000) == "claimed"

        bad = _listed(projector, "bad")
        assert bad is not None
        assert bad.request_hash is not None
        denied = runner.invoke(
            app,
            ["approvals", "deny", "run-r", "bad", "--approver", "ann", "--reason", "too much",
             "--request-hash", bad.request_hash],
        )  # fmt: skip
        assert denied.exit_code == 0, denied.output
        with pytest.raises(ApprovalDeniedError, match="too much"):
            claim("bad", 40_000)
        assert claim("later", 1) == "awaiting_approval"
        assert _listed(projector, "later") is not None
    projector.halt()
    projector.store.close()
    listed = runner.invoke(app, ["approvals", "list", "--db", str(topics.db_path), "--json"])
    assert listed.exit_code == 0, listed.output
    assert [p["key_name"] for p in json.loads(listed.output)] == ["later"]


def test_approve_names_a_step_that_awaits_nothing(
    topics: Settings, projector: RunningProjector, monkeypatch: pytest.MonkeyPatch
) -> None:
    _point_cli_at(topics, monkeypatch)
    projector.halt()
    projector.store.close()
    answer = CliRunner().invoke(
        app,
        ["approvals", "approve", "run-r", "none", "--approver", "ann", "--db", str(topics.db_path)],
    )
    assert answer.exit_code != 0
    assert isinstance(answer.exception, InvalidArgumentError)
    assert "awaits approval" in str(answer.exception)


def test_an_intent_listing_approvers_takes_only_a_cli_decision_signed_by_one(
    topics: Settings, projector: RunningProjector, monkeypatch: pytest.MonkeyPatch
) -> None:
    _point_cli_at(topics, monkeypatch)
    ann, mallory = new_private_key(), new_private_key()
    public = base64.b64encode(public_key_of(base64.b64decode(ann))).decode()
    worker = topics.model_copy(update={"approvers": {"ann": public}})
    runner = CliRunner()

    def approve(as_who: str) -> Result:
        return runner.invoke(
            app, ["approvals", "approve", "run-s", "big", "--approver", as_who,
                  "--request-hash", asked.execution.request_hash],
        )  # fmt: skip

    with SyncLedgerClient(worker, worker_id="agent", timeouts=FAST) as agent:
        params = {"order": "big", "amount_cents": 25_000}
        asked = agent.claim_execution("run-s", "big", tool_name="refund", params=params,
                                      approval=POLICY)  # fmt: skip
        assert asked.status == "awaiting_approval"
        unsigned = approve("ann")  # this process holds no key
        assert isinstance(unsigned.exception, ApprovalRefusedError), unsigned.output
        assert "not signed" in str(unsigned.exception)
        monkeypatch.setenv("ONCELOG_APPROVER_KEYS", json.dumps({"mallory": mallory}))
        assert isinstance(approve("mallory").exception, ApprovalRefusedError)
        again = agent.claim_execution("run-s", "big", tool_name="refund", params=params,
                                      approval=POLICY)  # fmt: skip
        assert again.status == "awaiting_approval"
        monkeypatch.setenv("ONCELOG_APPROVER_KEYS", json.dumps({"ann": ann}))
        signed = approve("ann")
        assert signed.exit_code == 0, signed.output
        granted = agent.claim_execution("run-s", "big", tool_name="refund", params=params,
                                        approval=POLICY)  # fmt: skip
        assert granted.status == "claimed"
    assert granted.execution is not None
