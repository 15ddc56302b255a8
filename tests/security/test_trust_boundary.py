"""The trust boundary end to end (docs/spec.md §8): nothing others can read works as a claim token.

The issue's repro: worker A claims ``charge:1`` in ``run-sec``; a second client
harvests every readable surface (the HTTP API, the CLI, the decisions and
executions topics, the DuckDB file) and tries each token-looking string as
A's token. Every try is fenced (``stale_claim``); A then completes normally.
A second test checks that no ``claim_token`` field is left in any readable
schema: the OpenAPI schema, the CLI's JSON, the decision and snapshot Avro
schemas, and the DuckDB tables.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from oncelog.cli import app
from oncelog.errors import StaleClaimError
from oncelog.identity.ids import operation_id
from oncelog.identity.partitioner import partition_for
from oncelog.identity.tokens import token_fingerprint
from oncelog.kafka.reader import read_to_end, topic_ends
from oncelog.query.http import create_app
from oncelog.query.server import HttpServer, start_http
from oncelog.schemas.codec import SCHEMA_DIR
from oncelog.settings import Settings
from tests.integration.conftest import RunningProjector
from tests.integration.helpers import kafka, wait_for_projection

API_TOKEN = "reader-key-for-the-test"
CHANNEL, KEY = "run-sec", "charge:1"
# Tokens are 32 hex digits; ids are UUIDs; hashes are 64 hex digits. Anything like
# them on a readable surface is tried as a token.
_HEX = re.compile(rb"[0-9a-f]{16,}")
_UUID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@pytest.fixture
def api(projector: RunningProjector) -> Iterator[HttpServer]:
    server = start_http(projector.store, "127.0.0.1", 0, token=SecretStr(API_TOKEN))
    yield server
    server.stop()


def _candidates(surfaces: list[bytes]) -> set[str]:
    found: set[str] = set()
    for blob in surfaces:
        for match in _HEX.findall(blob) + _UUID.findall(blob):
            text = match.decode()
            found.update({text, text[:32], text[-32:]})
    return found


def _http_surfaces(url: str, op: str) -> list[bytes]:
    auth = {"Authorization": f"Bearer {API_TOKEN}"}
    paths = [
        f"/v1/status/{CHANNEL}/{KEY}",
        f"/v1/history/{op}",
        f"/v1/timeline/{CHANNEL}",
        f"/v1/side-effects/{CHANNEL}?from_offset=0&to_offset=1000",
        "/v1/duplicates",
    ]
    out: list[bytes] = []
    for path in paths:
        answer = httpx.get(url + path, headers=auth, timeout=10)
        assert answer.status_code == 200, (path, answer.text)
        out.append(answer.content)
    return out


def _cli_surfaces(url: str, op: str) -> list[bytes]:
    runner = CliRunner()
    env = {"ONCELOG_HTTP_TOKEN": API_TOKEN}
    commands = [
        ["status", CHANNEL, KEY, "--json"],
        ["status", CHANNEL, KEY],
        ["history", op, "--json"],
        ["history", op],
        ["timeline", CHANNEL, "--json"],
        ["duplicates", "--json"],
    ]
    out: list[bytes] = []
    for command in commands:
        result = runner.invoke(app, [*command, "--url", url], env=env)
        assert result.exit_code == 0, (command, result.output)
        out.append(result.output.encode())
    return out


def _topic_surfaces(settings: Settings) -> list[bytes]:
    partition = partition_for(CHANNEL, settings.partitions)
    executions = read_to_end(kafka(settings), settings.executions_topic, partition)
    out = [m.value() or b"" for m in executions]
    # Decisions go to their clients' reply partitions: read every one that has any.
    for reply, end in topic_ends(kafka(settings), settings.decisions_topic).items():
        if end > 0:
            decisions = read_to_end(kafka(settings), settings.decisions_topic, reply)
            out.extend(m.value() or b"" for m in decisions)
    return out


def _duckdb_surfaces(projector: RunningProjector) -> list[bytes]:
    con = projector.store.cursor()
    out: list[bytes] = []
    for table in ("executions", "history", "requests", "dead_letters", "positions"):
        for row in con.execute(f"SELECT * FROM {table}").fetchall():
            out.append(repr(row).encode())
            out.extend(value for value in row if isinstance(value, bytes))
    return out


def test_no_readable_surface_yields_a_working_token(
    make_client: Any, projector: RunningProjector, api: HttpServer, topics: Settings
) -> None:
    worker_a, forger = make_client("worker-a"), make_client("forger")
    claim = worker_a.claim_execution(CHANNEL, KEY, tool_name="charge", params={"cents": 4200})
    token = claim.claim_token
    wait_for_projection(projector.projector, claim.execution.position)
    op = operation_id(CHANNEL, KEY)
    url = f"http://127.0.0.1:{api.port}"
    surfaces = (
        _http_surfaces(url, op)
        + _cli_surfaces(url, op)
        + _topic_surfaces(topics)
        + _duckdb_surfaces(projector)
    )
    assert not any(token.encode() in blob for blob in surfaces), "the token leaked"
    assert any(token_fingerprint(token).encode() in blob for blob in surfaces)
    candidates = _candidates(surfaces)
    assert token_fingerprint(token) in candidates
    assert op in candidates
    for candidate in sorted(candidates):
        with pytest.raises(StaleClaimError):
            forger.complete_execution(
                op, candidate, {"forged": True}, channel_id=CHANNEL, key_name=KEY
            )
    done = worker_a.complete_execution(claim.execution, token, {"charge_id": "ch_1"})
    assert (done.status, done.result, done.worker_id) == (
        "completed",
        {"charge_id": "ch_1"},
        "worker-a",
    )
    wait_for_projection(projector.projector, done.position)
    status = httpx.get(
        f"{url}/v1/status/{CHANNEL}/{KEY}", headers={"Authorization": f"Bearer {API_TOKEN}"}
    ).json()
    assert (status["status"], status["result"]) == ("completed", {"charge_id": "ch_1"})
    duplicates = httpx.get(
        f"{url}/v1/duplicates?limit=1000", headers={"Authorization": f"Bearer {API_TOKEN}"}
    ).json()["items"]
    # Every forgery is on record (a re-sent one twice), none under A's fingerprint.
    assert len(duplicates) >= len(candidates)
    assert token_fingerprint(token) not in {d["token_fp"] for d in duplicates}


def _field_names(schema: Any) -> Iterator[str]:
    """Every field or property name in a JSON/Avro schema, recursively."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "name" and isinstance(value, str):
                yield value
            if key == "properties" and isinstance(value, dict):
                yield from value
            yield from _field_names(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _field_names(item)


def test_no_claim_token_field_in_any_readable_schema(
    make_client: Any, projector: RunningProjector, api: HttpServer
) -> None:
    openapi = create_app(projector.store.cursor).openapi()
    assert "claim_token" not in set(_field_names(openapi))
    assert "token_fp" in set(_field_names(openapi))
    for avsc in ("decision.avsc", "execution_snapshot.avsc", "dev.oncelog.ExecutionState.avsc"):
        names = set(_field_names(json.loads((SCHEMA_DIR / avsc).read_text())))
        assert "claim_token" not in names, avsc
    con = projector.store.cursor()
    for table in ("executions", "history", "requests", "dead_letters", "positions"):
        columns = {row[0] for row in con.execute(f"DESCRIBE {table}").fetchall()}
        assert "claim_token" not in columns, table
    client = make_client("worker-json")
    claim = client.claim_execution(CHANNEL, "json:1", tool_name="t", params={})
    wait_for_projection(projector.projector, claim.execution.position)
    runner, url = CliRunner(), f"http://127.0.0.1:{api.port}"
    env = {"ONCELOG_HTTP_TOKEN": API_TOKEN}
    op = operation_id(CHANNEL, "json:1")
    for command in (["history", op], ["timeline", CHANNEL], ["status", CHANNEL, "json:1"]):
        result = runner.invoke(app, [*command, "--url", url, "--json"], env=env)
        assert result.exit_code == 0, result.output
        json.loads(result.output)  # one JSON document
        assert "claim_token" not in result.output, command
        assert claim.claim_token not in result.output, command
