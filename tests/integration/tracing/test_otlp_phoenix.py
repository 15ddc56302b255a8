"""Spans over OTLP to a real receiver on loopback, read back from it: Arize Phoenix.

Phoenix comes from PyPI (``make phoenix``: its own venv, ``.venv-phoenix``); it takes
OTLP over HTTP at ``/v1/traces`` and answers the spans it stored at
``/v1/projects/default/spans``. Without it the test skips, except under ``CI=true``,
where a missing receiver fails it. Phoenix keeps no links: those are checked in memory
(test_fold_link.py); here the names, parents and attributes make the round trip.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.producer.tool_model import ToolContext
from oncelog.settings import Settings
from oncelog.waiting import poll_until
from tests.integration.conftest import FAST, RunningProjector
from tests.integration.tracing.conftest import FANOUT

ROOT = Path(__file__).resolve().parents[3]
PHOENIX = Path(os.environ.get("ONCELOG_PHOENIX", ROOT / ".venv-phoenix" / "bin" / "phoenix"))
START_TIMEOUT_S = 300.0  # migrations and imports: about a minute on a busy 2-core machine
TEST_TRACER = trace.get_tracer("tests")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_healthy(url: str, process: subprocess.Popen[bytes], log: Path) -> None:

    def healthy() -> bool:
        if process.poll() is not None:
            raise AssertionError(f"phoenix exited {process.returncode}: {log.read_text()[-2000:]}")
        try:
            return httpx.get(f"{url}/healthz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    # Polling a server that is starting: no log position to wait on.
    if poll_until(time.monotonic() + START_TIMEOUT_S, healthy, pause_s=0.5):
        return
    raise AssertionError(
        f"phoenix not healthy within {START_TIMEOUT_S}s: {log.read_text()[-2000:]}"
    )


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Phoenix server on loopback (its own ports and working directory); its URL."""
    if not PHOENIX.exists():
        if os.environ.get("CI") == "true":
            pytest.fail(f"no OTLP receiver at {PHOENIX}: .ci/run must run `make phoenix`")
        pytest.skip(f"no OTLP receiver at {PHOENIX}: run `make phoenix` to install Phoenix")
    work = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = work / "phoenix.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(PHOENIX), "serve"], env=env, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, process, log)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


@pytest.fixture
def otlp(phoenix: str, tracer_provider: TracerProvider) -> Iterator[str]:
    """This process's spans also go over OTLP/HTTP to Phoenix, for the test."""
    processor = SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{phoenix}/v1/traces"))
    FANOUT.processors.append(processor)
    try:
        yield phoenix
    finally:
        FANOUT.processors.remove(processor)
        processor.shutdown()


def _stored(url: str, trace_id: str, at_least: int) -> list[dict[str, Any]]:
    """The spans Phoenix stored for ``trace_id`` (it ingests in the background: bounded wait)."""
    deadline = time.monotonic() + 60
    found: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        answer = httpx.get(f"{url}/v1/projects/default/spans", params={"limit": 1000}, timeout=10)
        answer.raise_for_status()
        found = [s for s in answer.json()["data"] if s["context"]["trace_id"] == trace_id]
        if len(found) >= at_least:
            return found
        time.sleep(0.2)  # Phoenix has no position to wait on
    raise AssertionError(f"Phoenix holds {len(found)} spans of trace {trace_id}")


def test_spans_reach_phoenix_over_otlp_and_read_back(
    topics: Settings, projector: RunningProjector, otlp: str
) -> None:
    """The broker first, then Phoenix: both are slow to start on a busy machine."""
    tokens: list[str] = []

    def charge(ctx: ToolContext) -> str:
        tokens.append(ctx.claim_token)
        return f"charged {ctx.params['order_id']}"

    with (
        SyncLedgerClient(topics, timeouts=FAST) as client,
        TEST_TRACER.start_as_current_span("agent step") as root,
    ):
        run = client.run_tool(
            "run-42", "charge:1", tool_name="charge", params={"order_id": "1"}, fn=charge
        )
    trace_id = f"{root.get_span_context().trace_id:032x}"
    stored = _stored(otlp, trace_id, at_least=5)
    by_id = {s["context"]["span_id"]: s for s in stored}
    names = {s["name"]: s for s in stored}
    assert {
        "agent step",
        "oncelog.run_tool",
        "oncelog.claim",
        "oncelog.tool",
        "oncelog.complete",
    } <= set(names)
    run_span = names["oncelog.run_tool"]
    assert by_id[run_span["parent_id"]]["name"] == "agent step"
    for child in ("oncelog.claim", "oncelog.tool", "oncelog.complete"):
        assert names[child]["parent_id"] == run_span["context"]["span_id"]
    claimed = names["oncelog.claim"]["attributes"]
    assert claimed["oncelog.idempotency_key"] == run.execution.idempotency_key
    assert claimed["oncelog.outcome"] == "claimed"
    assert claimed["messaging.system"] == "kafka"
    # The projector's fold spans went too, each in a trace of its own (linked, not parented).
    answer = httpx.get(f"{otlp}/v1/projects/default/spans", params={"limit": 1000}, timeout=10)
    everything = answer.json()["data"]
    folds = [s for s in everything if s["name"] == "oncelog.fold_batch"]
    assert folds
    assert all(s["context"]["trace_id"] != trace_id for s in folds)
    text = json.dumps(everything)
    assert tokens
    assert all(token not in text for token in tokens)
