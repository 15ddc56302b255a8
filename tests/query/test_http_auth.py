"""The HTTP API's trust boundary: bearer token, loopback-only without one, redacted results."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from oncelog.cli import serve_cmd
from oncelog.errors import InsecureBindError, InvalidConfigurationError, UnauthorizedError
from oncelog.identity.ids import operation_id
from oncelog.query.http import create_app
from oncelog.query.server import is_loopback, require_safe_bind, start_http
from oncelog.query.source import HttpSource
from oncelog.settings import Settings
from tests.query.query_factories import CHANNEL, STEP2, Ledger

TOKEN = "s3cret-token-for-tests"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
STATUS = f"/v1/status/{CHANNEL}/2"


@pytest.fixture
def guarded(ledger: Ledger) -> Iterator[TestClient]:
    app = create_app(ledger.store.cursor, token=SecretStr(TOKEN))
    with TestClient(app) as test_client:
        yield test_client


@pytest.mark.parametrize(
    "path", [STATUS, "/v1/duplicates", f"/v1/timeline/{CHANNEL}", "/v1/positions", "/nope"]
)
def test_no_token_is_a_json_401_with_a_bearer_challenge(guarded: TestClient, path: str) -> None:
    response = guarded.get(path)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["code"] == "unauthorized"
    assert "no bearer token" in response.json()["message"]


@pytest.mark.parametrize(
    "header",
    [
        "Bearer wrong",
        f"Bearer {TOKEN[:-1]}",
        f"Bearer {TOKEN}x",
        "Bearer ",
        f"Basic {TOKEN}",
        TOKEN,
    ],
)
def test_a_wrong_token_is_a_401(guarded: TestClient, header: str) -> None:
    response = guarded.get(STATUS, headers={"Authorization": header})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert response.json()["code"] == "unauthorized"
    assert "wrong bearer token" in response.json()["message"]
    assert "charged" not in response.text


def test_the_right_token_answers(guarded: TestClient) -> None:
    response = guarded.get(STATUS, headers=BEARER)
    assert response.status_code == 200
    assert response.json()["result"] == "charged"
    scheme_any_case = guarded.get(STATUS, headers={"Authorization": f"bearer {TOKEN}"})
    assert scheme_any_case.status_code == 200


def test_healthz_and_the_schema_stay_open(guarded: TestClient) -> None:
    assert guarded.get("/healthz").json() == {"status": "ok"}
    assert "/v1/duplicates" in guarded.get("/openapi.json").json()["paths"]
    assert guarded.get("/docs").status_code == 401  # no such page: closed like any path


def test_writes_are_still_refused_on_open_paths(guarded: TestClient) -> None:
    response = guarded.post("/healthz", headers=BEARER)
    assert response.status_code == 405


def test_an_empty_token_is_not_a_token() -> None:
    with pytest.raises(InvalidConfigurationError, match="ONCELOG_HTTP_TOKEN"):
        Settings(http_token=SecretStr(""))


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback(host)
    require_safe_bind(host, None)


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "::", "10.1.2.3", "example.com", "", "::ffff:10.0.0.1"]
)
def test_other_hosts_need_a_token(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(InsecureBindError) as raised:
        require_safe_bind(host, None)
    assert raised.value.code == "insecure_bind"
    require_safe_bind(host, SecretStr(TOKEN))


def test_start_http_refuses_any_address_without_a_token(ledger: Ledger) -> None:
    with pytest.raises(InsecureBindError):
        start_http(ledger.store, "0.0.0.0", 0)


def test_start_http_binds_any_address_with_a_token(ledger: Ledger) -> None:
    server = start_http(ledger.store, "0.0.0.0", 0, token=SecretStr(TOKEN))
    try:
        url = f"http://127.0.0.1:{server.port}"
        answer = HttpSource(url, token=SecretStr(TOKEN)).status(CHANNEL, "2", None)
        assert answer.result == "charged"
        with pytest.raises(UnauthorizedError):
            HttpSource(url).status(CHANNEL, "2", None)
    finally:
        server.stop()


def test_serve_refuses_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def started(*_: object) -> None:
        raise AssertionError("serve opened the store before refusing the bind")

    monkeypatch.setattr(serve_cmd, "Store", started)
    monkeypatch.setenv("ONCELOG_HTTP_HOST", "0.0.0.0")
    monkeypatch.delenv("ONCELOG_HTTP_TOKEN", raising=False)
    with pytest.raises(InsecureBindError):
        serve_cmd.serve(db=tmp_path / "ledger.duckdb")


@pytest.fixture
def redacting(ledger: Ledger) -> Iterator[TestClient]:
    with TestClient(create_app(ledger.store.cursor, redact_results=True)) as test_client:
        yield test_client


def test_redaction_leaves_results_out_and_keeps_hashes(
    redacting: TestClient, ledger: Ledger
) -> None:
    with TestClient(create_app(ledger.store.cursor)) as plain:
        full = plain.get(STATUS).json()
        full_history = plain.get(f"/v1/history/{operation_id(CHANNEL, STEP2)}").json()
    assert (full["result"], full["result_redacted"]) == ("charged", False)
    status = redacting.get(STATUS)
    assert (status.json()["result"], status.json()["result_redacted"]) == (None, True)
    assert status.json()["result_hash"] == full["result_hash"] is not None
    history = redacting.get(f"/v1/history/{operation_id(CHANNEL, STEP2)}")
    assert [v["result"] for v in history.json()["items"]] == [None, None, None]
    assert all(v["result_redacted"] for v in history.json()["items"])
    hashes = [v["result_hash"] for v in history.json()["items"]]
    assert hashes == [v["result_hash"] for v in full_history["items"]]
    timeline = redacting.get(f"/v1/timeline/{CHANNEL}")
    assert all("result" not in entry for entry in timeline.json()["items"])
    for response in (status, history, timeline, redacting.get(f"/v1/status/{CHANNEL}/1")):
        assert response.status_code == 200
        assert "charged" not in response.text
        assert '"ok"' not in response.text
