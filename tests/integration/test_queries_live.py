"""Queries over a live ledger: time travel, side effects, the HTTP API and the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from oncelog import verify_receipt
from oncelog.cli import app
from oncelog.errors import ReceiptError
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.query import effects, queries
from oncelog.query.server import HttpServer, start_http
from oncelog.settings import Settings
from tests.integration.conftest import RunningProjector
from tests.integration.helpers import wait_for_projection

pytestmark = pytest.mark.kafka


@pytest.fixture
def api(projector: RunningProjector) -> Iterator[HttpServer]:
    server = start_http(projector.store, "127.0.0.1", 0)
    yield server
    server.stop()


def _offset_of(projector: RunningProjector, request_kind: str, channel: str, key: str) -> int:
    rows = queries.channel_timeline(projector.store.cursor(), channel)
    return next(r.offset for r in rows if r.kind == request_kind and r.key_name == key)


def test_step_status_as_of_offsets_and_time_around_a_completion(
    client: Any, projector: RunningProjector
) -> None:
    client.claim_execution("run-q", step=2, tool_name="model", params={"p": 0})
    claim = client.claim_execution("run-q", step=3, tool_name="model", params={"p": 1})
    done = client.complete_execution(claim.execution, claim.claim_token, {"text": "hi"})
    wait_for_projection(projector.projector, done.position)
    con = projector.store.cursor()
    claim_offset = _offset_of(projector, "claim", "run-q", "step-3")
    complete_offset = _offset_of(projector, "complete", "run-q", "step-3")
    before = queries.step_status(con, "run-q", step=3, as_of=complete_offset - 1)
    assert (before.status, before.finished, before.result) == ("claimed", False, None)
    assert before.epoch == 1
    assert before.worker_id == client.worker_id
    after = queries.step_status(con, "run-q", step=3, as_of=complete_offset)
    assert (after.status, after.finished, after.result) == ("completed", True, {"text": "hi"})
    assert queries.step_status(con, "run-q", step=3, as_of=claim_offset - 1).status == "absent"
    assert done.completed_at_ms is not None
    at = datetime.fromtimestamp(done.completed_at_ms / 1000, tz=UTC)
    assert queries.step_status(con, "run-q", step=3, as_of=at).status == "completed"
    earlier = datetime.fromtimestamp((done.completed_at_ms - 1) / 1000, tz=UTC)
    assert queries.step_status(con, "run-q", step=3, as_of=earlier).status == "claimed"


def test_side_effects_separate_pure_and_external_steps(
    client: Any, projector: RunningProjector
) -> None:
    for step in range(1, 7):
        effect = "external" if step in (2, 5) else "pure"
        claim = client.claim_execution(
            "run-mix", step=step, tool_name="t", params={}, effect=effect
        )
        done = client.complete_execution(claim.execution, claim.claim_token, step)
    wait_for_projection(projector.projector, done.position)
    start, end = effects.bound("from", step=1), effects.bound("to", step=6)
    answer = effects.side_effects(projector.store.cursor(), "run-mix", start, end)
    assert answer.external == ["step-2", "step-5"]
    assert answer.pure == ["step-1", "step-3", "step-4", "step-6"]


def test_cli_status_prints_the_word_first_through_the_http_api(
    client: Any, api: HttpServer, projector: RunningProjector
) -> None:
    claim = client.claim_execution("run-cli", "email:1", tool_name="email", params={"to": "a"})
    done = client.complete_execution(claim.execution, claim.claim_token, {"sent": True})
    wait_for_projection(projector.projector, done.position)
    url = f"http://127.0.0.1:{api.port}"
    runner = CliRunner()
    result = runner.invoke(app, ["status", "run-cli", "email:1", "--url", url])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == "completed"
    as_json = runner.invoke(app, ["status", "run-cli", "email:1", "--url", url, "--json"])
    assert json.loads(as_json.output)["result"] == {"sent": True}
    timeline = runner.invoke(app, ["timeline", "run-cli", "--url", url, "--json"])
    assert [r["kind"] for r in json.loads(timeline.output)] == ["claim", "complete"]
    refused = runner.invoke(app, ["status", "run-cli", "email:1", "--url", url, "--as-of", "x"])
    assert refused.exit_code != 0


def test_receipt_round_trip_and_rejections(topics: Settings, projector: RunningProjector) -> None:
    keyed = topics.model_copy(update={"receipt_key": SecretStr("k" * 32)})
    with SyncLedgerClient(keyed, timeouts=Timeouts(30, 5)) as client:
        claim = client.claim_execution("run-r", "pay:1", tool_name="pay", params={"n": 1})
        done = client.complete_execution(claim.execution, claim.claim_token, {"paid": 1})
        token = client.receipt(done)
        assert client.receipt(done) == token  # re-derived, not re-minted
    claims = verify_receipt(token, "k" * 32)
    assert claims.operation_id == done.id
    assert claims.epoch == 1
    payload, signature = token.split(".")
    forged = payload + "." + signature[::-1]
    for bad, key in (
        (forged, "k" * 32),
        (token, "wrong-key"),
        (payload[:-2] + "AA." + signature, "k" * 32),
    ):
        with pytest.raises(ReceiptError):
            verify_receipt(bad, key)
    with pytest.raises(ReceiptError):
        verify_receipt(token, "k" * 32, now_ms=claims.expires_at_ms + 1)
