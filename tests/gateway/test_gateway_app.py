"""A gateway worker's app, in process over the in-memory ledger: its guard, its front, its
fallbacks (no broker)."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from pydantic import SecretStr

from oncelog.gateway.app import create_write_app
from oncelog.gateway.idempotency import KeyMemory
from oncelog.gateway.routes import WriteApi
from oncelog.query.problem import MEDIA_TYPE
from oncelog.testing import InMemoryLedger

TOKEN = "gateway-token"
CLAIM = {"channel_id": "c", "key_name": "k", "tool_name": "t", "params": {}, "worker_id": "w"}


def _client(tmp_path: Path) -> TestClient:
    api = WriteApi(InMemoryLedger(), SecretStr(TOKEN), KeyMemory(path=tmp_path / "keys"))
    return TestClient(create_write_app(api), headers={"Authorization": f"Bearer {TOKEN}"})


def test_a_claim_and_its_completion_are_answered(tmp_path: Path) -> None:
    with _client(tmp_path) as http:
        claimed = http.post("/v1/claims", json=CLAIM, headers={"Idempotency-Key": "a"})
        assert claimed.status_code == 200, claimed.text
        assert claimed.headers["content-type"] == "application/json"
        answer = claimed.json()
        assert answer["status"] == "claimed"
        again = http.post("/v1/claims", json=CLAIM, headers={"Idempotency-Key": "a"})
        assert again.json()["claim_token"] == answer["claim_token"]
        body = {"channel_id": "c", "key_name": "k", "claim_token": answer["claim_token"]}
        path = f"/v1/executions/{answer['execution']['id']}/complete"
        done = http.post(path, json={**body, "result": 1})
        assert (done.status_code, done.json()["status"]) == (200, "completed")
        reused = http.post(
            "/v1/claims", json={**CLAIM, "params": {"x": 1}}, headers={"Idempotency-Key": "a"}
        )
        assert (reused.status_code, reused.json()["code"]) == (422, "idempotency_key_reused")


def test_the_guard_and_the_problems_are_the_apps(tmp_path: Path) -> None:
    with _client(tmp_path) as http:
        anonymous = http.post("/v1/claims", json=CLAIM, headers={"Authorization": "Bearer no"})
        assert (anonymous.status_code, anonymous.json()["code"]) == (401, "unauthorized")
        bad = http.post("/v1/claims", json={**CLAIM, "lease_seconds": "5"})
        assert bad.status_code == 400
        assert bad.headers["content-type"] == MEDIA_TYPE
        assert "body.lease_seconds" in bad.json()["detail"]
        not_json = http.post(
            "/v1/claims", content=b"{", headers={"content-type": "application/json"}
        )
        assert (not_json.status_code, not_json.json()["code"]) == (400, "invalid_argument")
        assert http.get("/healthz", headers={"Authorization": ""}).json() == {"status": "ok"}
        assert http.get("/v1/nothing").status_code == 404
        assert http.put("/v1/claims", json=CLAIM).status_code == 405
