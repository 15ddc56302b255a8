"""``oncelog gateway`` with two worker processes on one port, against a real broker.

A key means the same on every worker: its retry gets the first answer back (the same
claim token) and its reuse with another payload is refused, whichever worker each fresh
connection reaches (the kernel spreads them, SO_REUSEPORT).
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from oncelog.identity.ids import operation_id
from oncelog.projector import process
from oncelog.settings import Settings
from oncelog.waiting import poll_until
from tests.gateway.conftest import WRITE_TOKEN
from tests.integration.conftest import RunningProjector

pytestmark = pytest.mark.kafka

# Fresh connections per check: each reaches either worker, so all on one worker is 2**-15.
CONNECTIONS = 16


@pytest.fixture
def gateway(topics: Settings, projector: RunningProjector, tmp_path: Path) -> Iterator[str]:
    """``oncelog gateway --workers 2`` on any port; its URL."""
    written = topics.model_copy(update={"http_write_token": SecretStr(WRITE_TOKEN)})
    log = tmp_path / "gateway.log"
    command = ["-m", "oncelog", "gateway", "--port", "0", "--workers", "2"]
    child = process.spawn(command, log, process.serve_env(written))
    url: list[str] = []

    def ready() -> bool:
        assert child.poll() is None, log.read_text()
        found = re.search(r"gateway on (http://\S+), 2 workers", log.read_text())
        url.extend([found.group(1)] if found else [])
        return bool(url)

    assert poll_until(time.monotonic() + process.START_TIMEOUT_S, ready), log.read_text()
    try:
        yield url[0]
    finally:
        assert process.stop(child) == 0, log.read_text()
    assert child.returncode == 0


def _fresh_post(url: str, path: str, body: dict[str, Any], key: str) -> httpx.Response:
    """One POST on a connection of its own (a new source port: any worker)."""
    headers = {"Authorization": f"Bearer {WRITE_TOKEN}", "Idempotency-Key": key}
    with httpx.Client(base_url=url, headers=headers) as http:
        return http.post(path, json=body)


def test_a_key_means_the_same_on_every_worker(gateway: str) -> None:
    claim = {
        "channel_id": "run-gw",
        "key_name": "charge",
        "tool_name": "charge",
        "params": {"order": 7},
        "worker_id": "ts-1",
    }
    first = _fresh_post(gateway, "/v1/claims", claim, "key-1")
    assert first.status_code == 200, first.text
    assert first.json()["status"] == "claimed"
    for _ in range(CONNECTIONS):
        retried = _fresh_post(gateway, "/v1/claims", claim, "key-1")
        assert retried.status_code == 200, retried.text
        # The grant back, with the token of the first POST: the same request to the fold.
        assert retried.json()["claim_token"] == first.json()["claim_token"]
        other = _fresh_post(gateway, "/v1/claims", {**claim, "params": {"order": 8}}, "key-1")
        assert other.status_code == 422, other.text
        assert other.json()["code"] == "idempotency_key_reused"
    op = operation_id("run-gw", "charge")
    done = {
        "channel_id": "run-gw",
        "key_name": "charge",
        "claim_token": first.json()["claim_token"],
    }
    completed = _fresh_post(gateway, f"/v1/executions/{op}/complete", {**done, "result": 1}, "k2")
    assert completed.json()["status"] == "completed", completed.text


def test_the_gateway_needs_a_write_token(topics: Settings, tmp_path: Path) -> None:
    log = tmp_path / "gateway.log"
    env = process.serve_env(topics)
    command = ["-m", "oncelog", "gateway", "--port", "0", "--workers", "1"]
    child = process.spawn(command, log, env)
    try:
        assert child.wait(timeout=process.START_TIMEOUT_S) == 2
    except subprocess.TimeoutExpired:
        child.kill()
        raise
    assert "ONCELOG_HTTP_WRITE_TOKEN" in log.read_text()
