"""The read-only HTTP API: routes, caps, JSON errors and the GET-only guard."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from oncelog.identity.ids import operation_id
from oncelog.query.http import create_app
from tests.query.query_factories import CHANNEL, CHARGE, LEASE_MS, STEP1, STEP2, Ledger


@pytest.fixture
def client(ledger: Ledger) -> Iterator[TestClient]:
    with TestClient(create_app(ledger.store.cursor, max_rows=5)) as test_client:
        yield test_client


def test_healthz(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}


def test_status_by_step_number_and_by_key(client: TestClient) -> None:
    body = client.get(f"/v1/status/{CHANNEL}/2").json()
    assert (body["status"], body["finished"], body["result"], body["epoch"]) == (
        "completed",
        True,
        "charged",
        2,
    )
    assert body["key_name"] == STEP2
    assert client.get(f"/v1/status/{CHANNEL}/{STEP2}").json() == body
    assert client.get(f"/v1/status/{CHANNEL}/{CHARGE}").json()["status"] == "claimed"
    assert client.get(f"/v1/status/{CHANNEL}/77").json()["status"] == "absent"


def test_digits_that_are_not_ascii_are_a_key_or_a_bad_position(client: TestClient) -> None:
    # str.isdigit() takes "¹" and int() refuses it: found by schemathesis, a 500 before.
    assert client.get(f"/v1/status/{CHANNEL}/¹").json()["status"] == "absent"
    response = client.get(f"/v1/status/{CHANNEL}/1?as_of=¹")
    assert (response.status_code, response.json()["code"]) == (400, "invalid_argument")


def test_status_as_of_offset_and_time(client: TestClient) -> None:
    assert client.get(f"/v1/status/{CHANNEL}/1?as_of=0").json()["status"] == "claimed"
    at = "1970-01-01T00:00:02Z"
    body = client.get(f"/v1/status/{CHANNEL}/1", params={"as_of": at}).json()
    assert body["status"] == "completed"
    assert body["as_of"].startswith("1970-01-01T00:00:02")


@pytest.mark.parametrize("as_of", ["1970-01-01T00:00:02", "yesterday", "-3"])
def test_bad_as_of_is_a_json_400(client: TestClient, as_of: str) -> None:
    response = client.get(f"/v1/status/{CHANNEL}/1", params={"as_of": as_of})
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_argument"


def test_history_and_timeline_are_capped(client: TestClient) -> None:
    history = client.get(f"/v1/history/{operation_id(CHANNEL, STEP2)}").json()
    assert [v["version"] for v in history["items"]] == [1, 2, 3]
    assert (history["limit"], history["truncated"]) == (5, False)
    timeline = client.get(f"/v1/timeline/{CHANNEL}", params={"limit": 1000}).json()
    assert (len(timeline["items"]), timeline["limit"], timeline["truncated"]) == (5, 5, True)
    small = client.get(f"/v1/timeline/{CHANNEL}", params={"limit": 2}).json()
    assert [e["offset"] for e in small["items"]] == [0, 1]
    assert small["truncated"] is True


def test_side_effects_and_duplicates(client: TestClient) -> None:
    effects = client.get(f"/v1/side-effects/{CHANNEL}", params={"from_step": 1, "to_step": 2})
    assert (effects.json()["pure"], effects.json()["external"]) == ([STEP1], [STEP2])
    assert (effects.json()["from_offset"], effects.json()["to_offset"]) == (0, 5)
    by_key = client.get(
        f"/v1/side-effects/{CHANNEL}",
        params={"from_key": STEP2, "to_time": "1970-01-01T00:00:13.003Z", "limit": 1},
    ).json()
    assert (by_key["external"], by_key["truncated"]) == ([STEP2], True)
    duplicates = client.get("/v1/duplicates").json()
    unknown, dup = duplicates["items"]
    assert (unknown["kind"], unknown["offset"], unknown["reconciled"]) == (
        "unknown_outcome",
        3,
        None,
    )
    assert dup["kind"] == "stale_completion"
    assert (dup["offset"], dup["log_time_ms"], dup["stale_worker_id"]) == (
        4,
        3_001 + LEASE_MS,
        "w1",
    )


def test_errors_are_json_with_code_and_message(client: TestClient) -> None:
    backwards = client.get(f"/v1/side-effects/{CHANNEL}", params={"from_step": 2, "to_step": 1})
    assert backwards.status_code == 400
    assert backwards.json()["code"] == "invalid_argument"
    assert "message" in backwards.json()
    missing = client.get(f"/v1/side-effects/{CHANNEL}")
    assert (missing.status_code, missing.json()["code"]) == (400, "invalid_argument")
    negative = client.get("/v1/duplicates", params={"limit": -1})
    assert negative.status_code == 400
    unknown = client.get("/v1/nothing-here")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "not_found")


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD", "TRACE"])
@pytest.mark.parametrize("path", [f"/v1/status/{CHANNEL}/1", "/v1/duplicates", "/healthz", "/x"])
def test_every_non_get_method_is_refused(client: TestClient, method: str, path: str) -> None:
    response = client.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == "GET"
    if method != "HEAD":
        assert response.json()["code"] == "method_not_allowed"


def test_openapi_is_served(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    assert "/v1/status/{channel_id}/{step_or_key}" in spec["paths"]
    assert all(set(ops) == {"get"} for ops in spec["paths"].values())
    # No Swagger page: it loaded its scripts from a CDN, blank offline.
    assert client.get("/docs").status_code == 404
    assert client.get("/redoc").status_code == 404


def test_positions_are_the_committed_next_offsets(client: TestClient, ledger: Ledger) -> None:
    body = client.get("/v1/positions").json()
    stored = {str(p): pos.next_offset for p, pos in ledger.store.positions().items()}
    assert stored  # the small ledger folded something
    assert body == {"next_offsets": stored}
