"""The SDK's spans (in memory, the real OpenTelemetry SDK): one per ledger call, one per
``run_tool`` around the claim, the tool and the completion; attributes and parentage."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from oncelog.errors import ConflictError
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.producer.tool_model import ToolContext
from oncelog.testing import InMemoryLedger
from oncelog.tracing import attributes as a
from tests.integration.tracing.conftest import everything_in, one

TEST_TRACER = trace.get_tracer("tests")


def _client(ledger: InMemoryLedger, *, payloads: bool = False) -> SyncLedgerClient:
    settings = ledger.settings.model_copy(update={"trace_payloads": payloads})
    return SyncLedgerClient(settings, transport=ledger)


def test_a_claim_and_a_complete_are_spans_under_the_callers(spans: InMemorySpanExporter) -> None:
    ledger = InMemoryLedger(partitions=3)
    with _client(ledger) as client, TEST_TRACER.start_as_current_span("agent step") as parent:
        claim = client.claim_execution(
            "run-42", "charge:4471", tool_name="charge", params={"order_id": "4471"}
        )
        client.complete_execution(claim.execution, claim.claim_token, {"charge": "ch_1"})
    finished = spans.get_finished_spans()
    claimed, completed = one(finished, "oncelog.claim"), one(finished, "oncelog.complete")
    for span in (claimed, completed):
        assert span.parent is not None
        assert span.parent.span_id == parent.get_span_context().span_id
        assert span.kind is trace.SpanKind.CLIENT
        attrs = span.attributes or {}
        assert attrs[a.CHANNEL] == "run-42"
        assert attrs[a.KEY_NAME] == "charge:4471"
        assert attrs[a.OPERATION_ID] == claim.execution.id
        assert attrs[a.IDEMPOTENCY_KEY] == claim.execution.idempotency_key
        assert attrs[a.EPOCH] == claim.execution.epoch == 1
        assert attrs[a.EFFECT] == "external"
        assert attrs[a.TOOL] == "charge"
        assert attrs[a.MESSAGING_SYSTEM] == "kafka"
        assert attrs[a.DESTINATION] == ledger.settings.requests_topic
        assert int(str(attrs[a.PARTITION])) in range(3)  # the request's, once decided
        assert isinstance(attrs[a.OFFSET], int)
        assert a.PARAMS not in attrs
        assert a.RESULT not in attrs
    assert (claimed.attributes or {})[a.OUTCOME] == "claimed"
    assert (claimed.attributes or {})[a.STATUS] == "claimed"
    assert (completed.attributes or {})[a.OUTCOME] == "completed"
    assert (completed.attributes or {})[a.STATUS] == "completed"
    assert claim.claim_token not in "".join(everything_in(s) for s in finished)


def test_params_and_results_go_on_spans_only_when_opted_in(spans: InMemorySpanExporter) -> None:
    ledger = InMemoryLedger(partitions=3)
    with _client(ledger, payloads=True) as client:
        claim = client.claim_execution("run-1", "k", tool_name="t", params={"order_id": "7"})
        client.complete_execution(claim.execution, claim.claim_token, {"charge": "ch_9"})
        replay = client.claim_execution("run-1", "k", tool_name="t", params={"order_id": "7"})
    assert replay.status == "replayed"
    claims = [s for s in spans.get_finished_spans() if s.name == "oncelog.claim"]
    assert [json.loads(str((s.attributes or {})[a.PARAMS])) for s in claims] == [
        {"order_id": "7"}
    ] * 2
    completed = one(spans.get_finished_spans(), "oncelog.complete")
    assert json.loads(str((completed.attributes or {})[a.RESULT])) == {"charge": "ch_9"}
    assert json.loads(str((claims[1].attributes or {})[a.RESULT])) == {"charge": "ch_9"}


def test_a_conflict_marks_its_span_with_the_error_code(spans: InMemorySpanExporter) -> None:
    ledger = InMemoryLedger(partitions=3)
    with _client(ledger) as client:
        client.claim_execution("run-1", "k", tool_name="t", params={"n": 1})
        with pytest.raises(ConflictError):
            client.claim_execution("run-1", "k", tool_name="t", params={"n": 2})
    conflicted = spans.get_finished_spans()[-1]
    assert conflicted.name == "oncelog.claim"
    assert conflicted.status.status_code is StatusCode.ERROR
    assert (conflicted.attributes or {})[a.ERROR_TYPE] == "conflict"
    assert (conflicted.attributes or {})[a.OUTCOME] == "conflict"


def _run_tool(client: SyncLedgerClient) -> Any:
    def charge(ctx: ToolContext) -> dict[str, str]:
        with TEST_TRACER.start_as_current_span("downstream call"):
            return {"charge": f"ch_{ctx.params['order_id']}"}

    return client.run_tool(
        "run-42", "charge:1", tool_name="charge", params={"order_id": "1"}, fn=charge
    )


def test_run_tool_is_a_span_over_claim_tool_and_complete(spans: InMemorySpanExporter) -> None:
    ledger = InMemoryLedger(partitions=3)
    with _client(ledger) as client:
        run = _run_tool(client)
    finished = spans.get_finished_spans()
    run_span = one(finished, "oncelog.run_tool")
    tool = one(finished, "oncelog.tool")
    for child in (one(finished, "oncelog.claim"), tool, one(finished, "oncelog.complete")):
        assert child.parent is not None
        assert child.parent.span_id == run_span.context.span_id
    downstream = one(finished, "downstream call")
    assert downstream.parent is not None
    assert downstream.parent.span_id == tool.context.span_id
    attrs = run_span.attributes or {}
    assert attrs[a.OUTCOME] == "claimed"
    assert attrs[a.STATUS] == "completed"
    assert attrs[a.IDEMPOTENCY_KEY] == run.execution.idempotency_key
    assert attrs[a.EPOCH] == 1
    assert attrs[a.RECONCILED] is False
    assert (tool.attributes or {})[a.IDEMPOTENCY_KEY] == run.execution.idempotency_key


def test_a_replayed_run_tool_has_no_tool_span(spans: InMemorySpanExporter) -> None:
    ledger = InMemoryLedger(partitions=3)
    with _client(ledger) as client:
        _run_tool(client)
        spans.clear()
        again = _run_tool(client)
    assert again.status == "replayed"
    names = sorted(s.name for s in spans.get_finished_spans())
    assert names == ["oncelog.claim", "oncelog.run_tool"]


async def test_the_async_client_nests_the_same_way(spans: InMemorySpanExporter) -> None:
    ledger = InMemoryLedger(partitions=3)

    async def charge(ctx: ToolContext) -> str:
        return "ok"

    async with ledger.client() as client:
        with TEST_TRACER.start_as_current_span("agent step") as parent:
            await client.run_tool("run-7", "k", tool_name="t", params={}, fn=charge)
    finished = spans.get_finished_spans()
    run_span = one(finished, "oncelog.run_tool")
    assert run_span.parent is not None
    assert run_span.parent.span_id == parent.get_span_context().span_id
    assert {
        s.name for s in finished if s.parent and s.parent.span_id == run_span.context.span_id
    } == {
        "oncelog.claim",
        "oncelog.tool",
        "oncelog.complete",
    }


_WITHOUT_OTEL = """
import sys
sys.modules["opentelemetry"] = None  # as if the otel extra were not installed
from oncelog.testing import InMemoryLedger
from oncelog import tracing
ledger = InMemoryLedger(partitions=3)
with ledger.sync_client() as client:
    run = client.run_tool("r", "k", tool_name="t", params={}, fn=lambda ctx: 1)
assert run.result == 1 and not tracing.active()
print(sorted(m for m, v in sys.modules.items() if m.startswith("opentelemetry") and v))
"""

_WITHOUT_PROVIDER = """
import sys
import opentelemetry.trace  # an application that imports the API but sets no provider
from oncelog.producer.dispatch import Dispatcher
from oncelog.tracing import active, propagation
with opentelemetry.trace.get_tracer("app").start_as_current_span("x"):
    print(active(), propagation.current_headers())
"""


@pytest.mark.parametrize(
    ("script", "printed"),
    [(_WITHOUT_OTEL, "[]"), (_WITHOUT_PROVIDER, "False None")],
    ids=["without-the-api", "without-a-provider"],
)
def test_without_a_tracer_provider_nothing_is_traced(script: str, printed: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == printed
