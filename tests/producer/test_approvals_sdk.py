"""The client's approval calls, through the in-memory ledger's real codec and fold."""

from __future__ import annotations

import base64
from collections.abc import Mapping

import pytest

from oncelog.errors import (
    ApprovalDeniedError,
    ApprovalExpiredError,
    ApprovalRefusedError,
    ConflictError,
    InvalidConfigurationError,
)
from oncelog.identity.approver_signature import new_private_key, public_key_of
from oncelog.producer.results import Claim, Execution
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.schemas.models import ApprovalPolicy
from oncelog.settings import Settings
from oncelog.testing import InMemoryLedger

POLICY = ApprovalPolicy(timeout_ms=60_000)
REFUND: Mapping[str, object] = {"order_id": "4471", "amount_cents": 25_000}


def _ask(
    client: SyncLedgerClient,
    params: Mapping[str, object] = REFUND,
    request_id: str | None = None,
    token: str | None = None,
) -> Claim:
    return client.claim_execution(
        "run-1", "refund:4471", tool_name="refund", params=params, approval=POLICY,
        request_id=request_id, claim_token=token,
    )  # fmt: skip


def _decide(
    ledger: InMemoryLedger, request_hash: str, approve: bool, reason: str = ""
) -> Execution:
    return ledger.sync_client(worker_id="desk").decide_approval(
        "run-1", "refund:4471", approver="ann", request_hash=request_hash, approve=approve,
        reason=reason,
    )  # fmt: skip


@pytest.fixture
def ledger() -> InMemoryLedger:
    return InMemoryLedger()


def test_an_approved_intent_is_claimed_by_the_waiting_claim_resent(ledger: InMemoryLedger) -> None:
    agent = ledger.sync_client(worker_id="agent")
    first = _ask(agent, request_id="ask-1")
    assert first.status == "awaiting_approval"
    assert _decide(ledger, first.execution.request_hash, approve=True).status == "approved"
    again = _ask(agent, request_id="ask-1", token=first.claim_token)
    assert again.status == "claimed"
    assert again.execution.epoch == 1


def test_after_a_restart_a_new_claim_takes_the_approved_grant(ledger: InMemoryLedger) -> None:
    first = _ask(ledger.sync_client(worker_id="agent"))
    _decide(ledger, first.execution.request_hash, approve=True)
    restarted = ledger.sync_client(worker_id="agent-2")
    assert _ask(restarted).status == "claimed"
    with pytest.raises(ConflictError):
        _ask(restarted, {"order_id": "4471", "amount_cents": 99_000})


def test_a_deny_ends_every_later_claim_with_the_reason(ledger: InMemoryLedger) -> None:
    first = _ask(ledger.sync_client(worker_id="agent"))
    _decide(ledger, first.execution.request_hash, approve=False, reason="over the limit")
    with pytest.raises(ApprovalDeniedError, match="by ann: over the limit"):
        _ask(ledger.sync_client(worker_id="agent-2"))


def test_the_requesting_worker_cannot_approve_and_an_undecided_intent_expires(
    ledger: InMemoryLedger,
) -> None:
    agent = ledger.sync_client(worker_id="agent")
    rhash = _ask(agent).execution.request_hash
    with pytest.raises(ApprovalRefusedError):
        agent.decide_approval(
            "run-1", "refund:4471", approver="agent", request_hash=rhash, approve=True
        )
    ledger.advance(61)
    with pytest.raises(ApprovalExpiredError):
        _ask(agent)


def test_a_worker_lists_its_configured_approvers_and_only_their_signature_decides() -> None:
    ann = new_private_key()
    public = base64.b64encode(public_key_of(base64.b64decode(ann))).decode()
    ledger = InMemoryLedger(settings=Settings(approvers={"ann": public}))
    asked = _ask(ledger.sync_client(worker_id="agent"))
    assert asked.decision is not None
    assert asked.decision.state is not None
    approval = asked.decision.state.approval
    assert approval is not None
    assert [(a.name, base64.b64encode(a.public_key).decode()) for a in approval.approvers] == [
        ("ann", public)
    ]
    desk = ledger.sync_client(worker_id="desk")
    request_hash = asked.execution.request_hash
    with pytest.raises(ApprovalRefusedError, match="not signed"):
        _decide(ledger, request_hash, approve=True)
    approved = desk.decide_approval(
        "run-1", "refund:4471", approver="ann", request_hash=request_hash, approve=True,
        signing_key=base64.b64decode(ann),
    )  # fmt: skip
    assert approved.status == "approved"


def test_approver_keys_in_settings_are_base64_of_32_bytes() -> None:
    with pytest.raises(InvalidConfigurationError, match="32"):
        Settings(approvers={"ann": base64.b64encode(b"x" * 31).decode()})
    with pytest.raises(InvalidConfigurationError, match="base64"):
        Settings(approver_keys={"ann": "not base64!"})
    secret = new_private_key()
    settings = Settings(approver_keys={"ann": secret})
    assert secret not in repr(settings)
    assert settings.approver_key("ann") == base64.b64decode(secret)
    assert settings.approver_key("bob") is None
