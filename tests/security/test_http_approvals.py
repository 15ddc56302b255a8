"""Deciding over HTTP needs an approver's token, and the decision is signed as that approver.

A real broker and a real ``oncelog serve`` with a read token, a write token and one
approver (ann: a token, her signing key; the workers list her public key). A worker's
intent is decided only through ``POST /v1/approvals/{operation_id}/approve|deny`` with
ann's token: no token, the read token, the write token and the worker's claim token are
refused (401, problem+json); ann's token approves and the next claim is granted, and her
name, never her token, is recorded. Then every surface others read is searched for her
token, as tests/security/test_http_write_secrecy.py searches for claim tokens.
"""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from oncelog.errors import ApprovalDeniedError, ConfigError
from oncelog.gateway.approval_desk import open_approval_desk
from oncelog.identity.approver_signature import new_private_key, public_key_of
from oncelog.identity.ids import operation_id
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.schemas.models import ApprovalPolicy
from oncelog.settings import Settings
from oncelog.waiting import poll_until
from tests.security.test_http_write_secrecy import READ_TOKEN, _duckdb_text
from tests.served import WRITE_TOKEN, Served, serving

pytestmark = pytest.mark.kafka

ANN_TOKEN = "approver-ann-token-never-shown"
ANN_KEY = new_private_key()
ANN_PUBLIC = base64.b64encode(public_key_of(base64.b64decode(ANN_KEY))).decode()
CHANNEL = "run-approvals-http"
POLICY = ApprovalPolicy(timeout_ms=3_600_000)
PARAMS = {"order": "4471", "amount_cents": 25_000}


def _ask(agent: SyncLedgerClient, key: str) -> tuple[str, str]:
    """An intent of ``key``: (its request hash, the claim token the agent re-sends)."""
    asked = agent.claim_execution(CHANNEL, key, tool_name="refund", params=PARAMS, approval=POLICY)
    assert asked.status == "awaiting_approval"
    return asked.execution.request_hash, asked.claim_token


def _decide(
    served: Served, key: str, action: str, bearer: str | None, **body: Any
) -> httpx.Response:
    headers = {} if bearer is None else {"Authorization": f"Bearer {bearer}"}
    payload = {"channel_id": CHANNEL, "key_name": key, **body}
    url = f"{served.url}/v1/approvals/{operation_id(CHANNEL, key)}/{action}"
    return httpx.post(url, json=payload, headers=headers, timeout=60)


def _pending(served: Served) -> str:
    """GET /v1/approvals once the projector listed an intent (bounded wait)."""
    reader = {"Authorization": f"Bearer {READ_TOKEN}"}

    def listed() -> str | None:
        text = httpx.get(f"{served.url}/v1/approvals", headers=reader, timeout=60).text
        return text if CHANNEL in text else None

    text = poll_until(time.monotonic() + 30, listed)
    assert text is not None, "the intent was never listed"
    return text


def test_only_an_approvers_token_decides_and_it_is_never_shown(
    bootstrap: str, tmp_path: Path
) -> None:
    approvals: dict[str, Any] = {
        "approvers": {"ann": ANN_PUBLIC},
        "approver_keys": {"ann": ANN_KEY},
        "http_approver_tokens": {"ann": ANN_TOKEN},
    }
    with serving(bootstrap, tmp_path, read_token=READ_TOKEN, **approvals) as served:
        worker = served.settings.model_copy(
            update={"approver_keys": {}, "http_approver_tokens": {}}
        )
        with SyncLedgerClient(worker, worker_id="agent") as agent:
            request_hash, claim_token = _ask(agent, "big")
            pending = _pending(served)
            for bearer in (None, READ_TOKEN, WRITE_TOKEN, claim_token):
                refused = _decide(served, "big", "approve", bearer, request_hash=request_hash)
                assert refused.status_code == 401, refused.text
                assert refused.headers["content-type"] == "application/problem+json"
                assert refused.json()["code"] == "unauthorized"
            assert agent.claim_execution(CHANNEL, "big", tool_name="refund", params=PARAMS,
                                         approval=POLICY).status == "awaiting_approval"  # fmt: skip
            approved = _decide(served, "big", "approve", ANN_TOKEN, request_hash=request_hash)
            assert approved.status_code == 200, approved.text
            assert approved.json()["status"] == "approved"
            granted = agent.claim_execution(CHANNEL, "big", tool_name="refund", params=PARAMS,
                                            approval=POLICY)  # fmt: skip
            assert granted.status == "claimed"
            assert granted.decision is not None
            assert granted.decision.state is not None
            assert granted.decision.state.approval is not None
            assert granted.decision.state.approval.decided_by == "ann"
            other, _ = _ask(agent, "bad")
            denied = _decide(served, "bad", "deny", ANN_TOKEN, request_hash=other, reason="no")
            assert denied.status_code == 200, denied.text
            with pytest.raises(ApprovalDeniedError, match="no"):
                agent.claim_execution(CHANNEL, "bad", tool_name="refund", params=PARAMS,
                                      approval=POLICY)  # fmt: skip
        reader = httpx.Client(
            base_url=served.url, headers={"Authorization": f"Bearer {READ_TOKEN}"}
        )
        op = operation_id(CHANNEL, "big")
        reads = {path: reader.get(path).text for path in (
            f"/v1/timeline/{CHANNEL}", f"/v1/history/{op}", "/v1/approvals", "/v1/duplicates",
            "/metrics", "/openapi.json", "/ui/approvals", f"/ui/runs/{CHANNEL}",
        )}  # fmt: skip
    assert "ann" in reads[f"/v1/timeline/{CHANNEL}"]  # the approver's name is recorded
    assert "<form" in reads["/ui/approvals"] or "pending" in reads["/ui/approvals"].lower()
    assert "/v1/approvals/{operation_id}/approve" in reads["/openapi.json"]
    surfaces = {
        "pending list": pending,
        "answers": approved.text + denied.text + refused.text,
        **reads,
        "serve log": served.log.read_text(),
        "DuckDB": _duckdb_text(served.settings.db_path),
    }
    assert [where for where, text in surfaces.items() if ANN_TOKEN in text] == []
    assert [where for where, text in surfaces.items() if ANN_KEY in text] == []


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({"http_approver_tokens": {"ann": "t" * 20}}, "no key"),
        ({"http_approver_tokens": {"ann": WRITE_TOKEN}, "approver_keys": {"ann": ANN_KEY}},
         "equals the read or the write token"),
    ],
)  # fmt: skip
def test_approver_tokens_need_a_key_and_a_token_of_their_own(
    extra: dict[str, Any], why: str
) -> None:
    settings = Settings(http_write_token=WRITE_TOKEN, **extra)
    with pytest.raises(ConfigError, match=why):
        open_approval_desk(settings, "127.0.0.1:1")


def test_a_claim_over_http_asks_for_approval_and_learns_the_decision(
    bootstrap: str, tmp_path: Path
) -> None:
    approvals: dict[str, Any] = {
        "approvers": {"ann": ANN_PUBLIC},
        "approver_keys": {"ann": ANN_KEY},
        "http_approver_tokens": {"ann": ANN_TOKEN},
    }
    with serving(bootstrap, tmp_path, **approvals) as served:
        writer = httpx.Client(
            base_url=served.url, headers={"Authorization": f"Bearer {WRITE_TOKEN}"}, timeout=60
        )

        def claim(key: str, amount: int, idempotency_key: str) -> httpx.Response:
            body = {"channel_id": CHANNEL, "key_name": key, "tool_name": "refund",
                    "params": {"order": key, "amount_cents": amount}, "worker_id": "ts-worker",
                    "approval": {"timeout_seconds": 3600}}  # fmt: skip
            return writer.post(
                "/v1/claims", json=body, headers={"Idempotency-Key": idempotency_key}
            )

        asked = claim("big", 25_000, "ask-big")
        assert asked.status_code == 200, asked.text
        assert asked.json()["status"] == "awaiting_approval"
        assert asked.json()["claim_token"] is None  # nothing is held yet
        request_hash = asked.json()["execution"]["request_hash"]
        assert claim("big", 25_000, "ask-big").json()["status"] == "awaiting_approval"
        approved = _decide(served, "big", "approve", ANN_TOKEN, request_hash=request_hash)
        assert approved.status_code == 200, approved.text
        granted = claim("big", 25_000, "ask-big")  # the waiting claim, sent again
        assert granted.json()["status"] == "claimed", granted.text
        assert granted.json()["claim_token"]
        changed = claim("big", 99_000, "ask-big-other")
        assert changed.status_code == 409
        assert changed.json()["code"] == "conflict"
        other = claim("bad", 40_000, "ask-bad").json()["execution"]["request_hash"]
        _decide(served, "bad", "deny", ANN_TOKEN, request_hash=other, reason="too much")
        denied = claim("bad", 40_000, "ask-bad")
        assert denied.status_code == 409
        assert denied.headers["content-type"] == "application/problem+json"
        assert (denied.json()["code"], "too much" in denied.json()["detail"]) == (
            "approval_denied", True,
        )  # fmt: skip
