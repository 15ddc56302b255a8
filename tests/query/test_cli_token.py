"""The CLI's read commands against a real served API that requires a bearer token."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from oncelog.cli import app, main
from oncelog.errors import UnauthorizedError
from oncelog.identity.ids import operation_id
from oncelog.query.server import HttpServer, start_http
from tests.query.query_factories import CHANNEL, STEP2, Ledger

TOKEN = "cli-token-for-tests"


@pytest.fixture
def api(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> Iterator[HttpServer]:
    monkeypatch.delenv("ONCELOG_HTTP_TOKEN", raising=False)
    server = start_http(ledger.store, "127.0.0.1", 0, token=SecretStr(TOKEN))
    yield server
    server.stop()


@pytest.fixture
def redacting_api(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> Iterator[HttpServer]:
    monkeypatch.setenv("ONCELOG_HTTP_TOKEN", TOKEN)
    server = start_http(ledger.store, "127.0.0.1", 0, token=SecretStr(TOKEN), redact_results=True)
    yield server
    server.stop()


def _url(server: HttpServer) -> str:
    return f"http://127.0.0.1:{server.port}"


def test_read_commands_send_the_token_from_the_environment(
    api: HttpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ONCELOG_HTTP_TOKEN", TOKEN)
    runner, url = CliRunner(), _url(api)
    status = runner.invoke(app, ["status", CHANNEL, "2", "--url", url, "--json"])
    assert status.exit_code == 0, status.output
    assert json.loads(status.output)["result"] == "charged"
    history = runner.invoke(app, ["history", operation_id(CHANNEL, STEP2), "--url", url, "--json"])
    assert [v["version"] for v in json.loads(history.output)] == [1, 2, 3]
    timeline = runner.invoke(app, ["timeline", CHANNEL, "--url", url, "--json"])
    assert len(json.loads(timeline.output)) == 7
    duplicates = runner.invoke(app, ["duplicates", "--url", url, "--json"])
    kinds = [d["kind"] for d in json.loads(duplicates.output)]
    assert kinds == ["unknown_outcome", "stale_completion"]


def test_the_default_url_finds_the_api_and_sends_the_token(
    api: HttpServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ONCELOG_HTTP_TOKEN", TOKEN)
    monkeypatch.setenv("ONCELOG_HTTP_PORT", str(api.port))
    result = CliRunner().invoke(app, ["status", CHANNEL, "2"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == "completed"


@pytest.mark.parametrize("token", [None, "wrong"])
def test_without_the_right_token_a_read_is_unauthorized(
    api: HttpServer, monkeypatch: pytest.MonkeyPatch, token: str | None
) -> None:
    if token is not None:
        monkeypatch.setenv("ONCELOG_HTTP_TOKEN", token)
    result = CliRunner().invoke(app, ["status", CHANNEL, "2", "--url", _url(api)])
    assert isinstance(result.exception, UnauthorizedError)
    assert result.exception.code == "unauthorized"


def test_a_401_is_a_message_and_exit_2_not_a_traceback(
    api: HttpServer, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["oncelog", "timeline", CHANNEL, "--url", _url(api)])
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "[unauthorized]" in err
    assert "ONCELOG_HTTP_TOKEN" in err
    assert "Traceback" not in err


def test_a_redacting_api_shows_no_result_through_the_cli(redacting_api: HttpServer) -> None:
    runner, url = CliRunner(), _url(redacting_api)
    status = runner.invoke(app, ["status", CHANNEL, "2", "--url", url, "--json"])
    assert status.exit_code == 0, status.output
    answer = json.loads(status.output)
    assert (answer["result"], answer["result_redacted"]) == (None, True)
    assert answer["result_hash"] is not None
    history = runner.invoke(app, ["history", operation_id(CHANNEL, STEP2), "--url", url])
    assert history.exit_code == 0, history.output
    assert "charged" not in history.output + status.output
