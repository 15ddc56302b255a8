"""An Idempotency-Key names one request: the operation of the path is part of it.

The write API checks that the path's operation is the body's before it looks a key up, so a
key reused with the same body on another operation's path is refused as a bad argument, and
never taken for a retry of the first request (the body's channel and key name the operation,
so the fingerprint's operation id cannot tell two accepted requests apart any more).
"""

from __future__ import annotations

import uuid

import pytest

from oncelog.identity.ids import operation_id
from tests.gateway.conftest import WriteClient

pytestmark = pytest.mark.kafka

CHANNEL = "run-keys"


def test_a_key_reused_for_complete_on_another_operation_is_refused(write_api: WriteClient) -> None:
    http = write_api.http
    claim = {"channel_id": CHANNEL, "key_name": "a", "tool_name": "t", "params": {}}
    claimed = http.post("/v1/claims", json={**claim, "worker_id": "w1"})
    assert claimed.status_code == 200, claimed.text
    body = {
        "channel_id": CHANNEL,
        "key_name": "a",
        "claim_token": claimed.json()["claim_token"],
        "result": {"ok": True},
    }
    key = {"Idempotency-Key": str(uuid.uuid4())}
    done = http.post(
        f"/v1/executions/{operation_id(CHANNEL, 'a')}/complete", json=body, headers=key
    )
    assert (done.status_code, done.json()["status"]) == (200, "completed")
    # The same key and body on another operation's path: another request, not a retry.
    other = http.post(
        f"/v1/executions/{operation_id(CHANNEL, 'b')}/complete", json=body, headers=key
    )
    assert other.status_code == 400, other.text
    assert other.json()["code"] == "invalid_argument"
    assert "is not execution" in other.json()["detail"]
    # The first request's answer was not replayed for the other path.
    assert other.json()["status"] == 400
