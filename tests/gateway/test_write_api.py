"""The HTTP write API against a real broker and projector: the SDK's semantics over HTTP."""

from __future__ import annotations

import uuid
from typing import Any

import httpx2  # what starlette's TestClient answers with
import pytest

from oncelog.gateway.idempotency import fingerprint
from oncelog.gateway.models import ClaimBody
from oncelog.identity.ids import operation_id
from oncelog.query.problem import MEDIA_TYPE
from tests.gateway.conftest import READ_TOKEN, WRITE_TOKEN, WriteClient
from tests.integration.helpers import wait_until_log_time_passes

pytestmark = pytest.mark.kafka

CHANNEL = "run-http"


def _claim_body(name: str, **body: Any) -> dict[str, Any]:
    defaults = {"tool_name": "charge", "params": {"order": name}, "worker_id": "ts-worker-1"}
    return {"channel_id": CHANNEL, "key_name": name, **defaults, **body}


def _claim(
    client: WriteClient, name: str, *, key: str | None = None, **body: Any
) -> httpx2.Response:
    payload = _claim_body(name, **body)
    headers = {} if key is None else {"Idempotency-Key": f'"{key}"'}
    return client.http.post("/v1/claims", json=payload, headers=headers)


def _act(
    client: WriteClient, key_name: str, action: str, *, key: str | None = None, **body: Any
) -> httpx2.Response:
    op = operation_id(CHANNEL, key_name)
    headers = {} if key is None else {"Idempotency-Key": key}
    payload = {"channel_id": CHANNEL, "key_name": key_name, **body}
    return client.http.post(f"/v1/executions/{op}/{action}", json=payload, headers=headers)


def _problem(response: httpx2.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == MEDIA_TYPE
    body: dict[str, Any] = response.json()
    assert (body["status"], body["code"], body["type"]) == (
        status,
        code,
        f"urn:oncelog:problem:{code}",
    )
    assert body["detail"] == body["message"]
    return body


def test_claim_complete_then_replay(write_api: WriteClient) -> None:
    claimed = _claim(write_api, "a")
    assert claimed.status_code == 200, claimed.text
    answer = claimed.json()
    assert answer["status"] == "claimed"
    assert answer["execution"]["epoch"] == 1
    assert answer["execution"]["worker_id"] == "ts-worker-1"
    token = answer["claim_token"]
    beat = _act(write_api, "a", "heartbeat", claim_token=token, lease_seconds=30)
    assert beat.json()["cancel_requested"] is False
    done = _act(write_api, "a", "complete", claim_token=token, result={"charged": 42})
    assert (done.status_code, done.json()["status"]) == (200, "completed")
    again = _claim(write_api, "a").json()
    assert (again["status"], again["result"], again["claim_token"]) == (
        "replayed",
        {"charged": 42},
        None,
    )
    got = write_api.http.get(
        f"/v1/executions/{operation_id(CHANNEL, 'a')}",
        params={"channel_id": CHANNEL, "key_name": "a"},
    )
    assert got.json()["result"] == {"charged": 42}


def test_a_retried_claim_is_the_same_request_and_gets_its_grant_back(
    write_api: WriteClient,
) -> None:
    key = str(uuid.uuid4())
    first = _claim(write_api, "b", key=key).json()
    retry = _claim(write_api, "b", key=key).json()
    assert retry["status"] == "claimed"
    assert retry["claim_token"] == first["claim_token"]
    assert retry["execution"]["epoch"] == first["execution"]["epoch"] == 1
    other = _claim(write_api, "b", key=str(uuid.uuid4()), worker_id="someone-else").json()
    assert (other["status"], other["holder"], other["claim_token"]) == (
        "in_progress",
        "ts-worker-1",
        None,
    )


def test_a_key_reused_with_another_payload_is_422(write_api: WriteClient) -> None:
    key = str(uuid.uuid4())
    assert _claim(write_api, "c", key=key).status_code == 200
    _problem(
        _claim(write_api, "c", key=key, params={"order": "other"}), 422, "idempotency_key_reused"
    )


def test_a_request_still_in_flight_is_409(write_api: WriteClient) -> None:
    # The first request is held open by the test (no race): its retry arrives meanwhile.
    key_name, key = "d", str(uuid.uuid4())
    full = ClaimBody.model_validate(_claim_body(key_name)).model_dump(mode="json")
    with write_api.keys.hold(key, fingerprint("/v1/claims", full)):
        _problem(_claim(write_api, key_name, key=key), 409, "request_in_flight")
    assert _claim(write_api, key_name, key=key).json()["status"] == "claimed"


def test_conflict_stale_claim_and_result_expired_are_409(write_api: WriteClient) -> None:
    token = _claim(write_api, "e", retention_seconds=0.001).json()["claim_token"]
    _problem(_claim(write_api, "e", params={"order": "changed"}), 409, "conflict")
    _problem(_act(write_api, "e", "complete", claim_token="0" * 32, result=1), 409, "stale_claim")
    done = _act(write_api, "e", "complete", claim_token=token, result=1).json()
    wait_until_log_time_passes(done["expires_at_ms"])
    _problem(_claim(write_api, "e"), 409, "result_expired")


def test_fail_release_cancel_and_reconciled(write_api: WriteClient) -> None:
    token = _claim(write_api, "f").json()["claim_token"]
    failed = _act(write_api, "f", "fail", claim_token=token, error="boom", retryable=True)
    assert (failed.json()["status"], failed.json()["error"]) == ("failed", "boom")
    again = _claim(write_api, "f").json()
    assert again["status"] == "reclaimed"
    assert again["previous"]["epoch"] == 1
    assert again["previous"]["token_fp"] not in (token, again["claim_token"])
    cancel = _act(write_api, "f", "cancel", reason="stop it")
    assert cancel.json() == {"outcome": "cancel_requested"}
    beat = _act(write_api, "f", "heartbeat", claim_token=again["claim_token"]).json()
    assert (beat["cancel_requested"], beat["cancel_reason"]) == (True, "stop it")
    released = _act(write_api, "f", "release", claim_token=again["claim_token"])
    assert released.json()["status"] == "claimed"
    last = _claim(write_api, "f").json()
    done = _act(
        write_api, "f", "complete", claim_token=last["claim_token"], result=7, reconciled="found"
    )
    assert done.json()["result"] == 7
    _problem(
        _act(write_api, "f", "complete", claim_token=last["claim_token"], result=7, reconciled="x"),
        400,
        "invalid_argument",
    )


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ({"lease_seconds": 0.5}, "lease"),
        ({"surprise": 1}, "surprise"),
        ({"key_name": None}, "key_name"),
        ({"params": []}, "params"),
        ({"lease_seconds": "60"}, "lease_seconds"),
        ({"channel_id": "a\x00b"}, "control"),
        ({"dedup_fields": ["absent"]}, "absent"),
    ],
)
def test_bad_arguments_are_400_before_anything_is_produced(
    write_api: WriteClient, body: dict[str, Any], why: str
) -> None:
    detail = _problem(_claim(write_api, "g", **body), 400, "invalid_argument")["detail"]
    assert why in detail


def test_the_names_must_be_the_operation_of_the_path(write_api: WriteClient) -> None:
    op = operation_id(CHANNEL, "h")
    body = {"channel_id": CHANNEL, "key_name": "not-h", "claim_token": "t" * 32, "result": 1}
    response = write_api.http.post(f"/v1/executions/{op}/complete", json=body)
    _problem(response, 400, "invalid_argument")


def test_an_absent_execution_is_404(write_api: WriteClient) -> None:
    op = operation_id(CHANNEL, "never")
    got = write_api.http.get(
        f"/v1/executions/{op}", params={"channel_id": CHANNEL, "key_name": "never"}
    )
    _problem(got, 404, "not_found")


@pytest.mark.parametrize("bearer", [None, READ_TOKEN, WRITE_TOKEN + "x"])
def test_writes_need_the_write_token(write_api: WriteClient, bearer: str | None) -> None:
    headers = {"Authorization": "" if bearer is None else f"Bearer {bearer}"}
    response = write_api.http.post("/v1/claims", json={}, headers=headers)
    body = _problem(response, 401, "unauthorized")
    assert response.headers["www-authenticate"] == "Bearer"
    assert WRITE_TOKEN not in body["detail"]


def test_reads_keep_the_read_token(write_api: WriteClient) -> None:
    path = f"/v1/timeline/{CHANNEL}"
    _problem(write_api.http.get(path), 401, "unauthorized")
    read = write_api.http.get(path, headers={"Authorization": f"Bearer {READ_TOKEN}"})
    assert read.status_code == 200


def test_a_bad_idempotency_key_is_400(write_api: WriteClient) -> None:
    _problem(_claim(write_api, "i", key="k" * 300), 400, "invalid_argument")
