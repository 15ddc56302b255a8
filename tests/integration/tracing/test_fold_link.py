"""Context through the log, on the real broker: the request record carries the caller's
``traceparent``; the projector's batch span links to the caller's span (a link, not a
parent); the decision carries the batch span's context back, which the call links to."""

from __future__ import annotations

from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from oncelog.identity.partitioner import partition_for
from oncelog.kafka.reader import read_to_end
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.producer.tool_model import ToolContext
from oncelog.settings import Settings
from oncelog.tracing import attributes as a
from oncelog.tracing.propagation import traceparent_of
from tests.integration.conftest import FAST, RunningProjector
from tests.integration.helpers import kafka
from tests.integration.tracing.conftest import everything_in, named, one

TEST_TRACER = trace.get_tracer("tests")


def _traceparent(span: ReadableSpan) -> bytes:
    context = span.context
    flags = int(context.trace_flags)
    return f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags:02x}".encode()


def _ids(context: trace.SpanContext | None) -> tuple[int, int]:
    assert context is not None
    return context.trace_id, context.span_id


def _folds_of(
    finished: list[ReadableSpan], call: ReadableSpan
) -> list[tuple[ReadableSpan, trace.Link]]:
    """The batch spans linked to ``call``, each with its link: one per copy of its request
    that was folded (a re-send on a slow broker is a second copy, answered the same)."""
    return [
        (s, k)
        for s in named(finished, "oncelog.fold_batch")
        for k in s.links
        if _ids(k.context) == _ids(call.context)
    ]


def test_the_fold_span_links_to_the_callers_span_and_back(
    client: Any, topics: Settings, projector: RunningProjector, spans: InMemorySpanExporter
) -> None:
    with TEST_TRACER.start_as_current_span("agent step"):
        claim = client.claim_execution("run-42", "charge:1", tool_name="charge", params={"n": 1})
        client.complete_execution(claim.execution, claim.claim_token, {"charge": "ch_1"})
    finished = list(spans.get_finished_spans())
    called = one(finished, "oncelog.claim")
    folds = _folds_of(finished, called)
    assert folds, [s.name for s in finished]
    # The call links back to the fold whose decision answered it, through its header.
    assert len(called.links) == 1
    [(batch, link)] = [f for f in folds if _ids(f[0].context) == _ids(called.links[0].context)]
    # Linked, not parented: the batch is in a trace of its own.
    assert batch.context.trace_id != called.context.trace_id
    assert batch.parent is None
    assert batch.kind is trace.SpanKind.CONSUMER
    fold_attrs, call_attrs = link.attributes or {}, called.attributes or {}
    assert fold_attrs["oncelog.link.role"] == "caller"
    for name in (a.OPERATION_ID, a.KIND, a.OUTCOME, a.OFFSET):
        assert fold_attrs[name] == call_attrs[name]
    # The request's position, known once decided, is the record's.
    p = partition_for("run-42", topics.partitions)
    assert call_attrs[a.PARTITION] == fold_attrs[a.PARTITION] == str(p)
    records = {m.offset(): m for m in read_to_end(kafka(topics), topics.requests_topic, p)}
    record = records[int(str(call_attrs[a.OFFSET]))]
    assert record.key() == claim.execution.id.encode()
    assert traceparent_of(record.headers()) == _traceparent(called)
    assert claim.claim_token not in "".join(everything_in(s) for s in finished)


def test_no_span_carries_a_claim_token(
    topics: Settings, projector: RunningProjector, spans: InMemorySpanExporter
) -> None:
    """Every call, payloads opted in, a run_tool with a heartbeat; the tokens are nowhere."""
    settings = topics.model_copy(update={"trace_payloads": True})
    tokens: list[str] = []
    with SyncLedgerClient(settings, timeouts=FAST) as client:
        first = client.claim_execution(
            "run-9", "k", tool_name="t", params={"x": 1}, lease_seconds=2
        )
        tokens.append(first.claim_token)
        client.heartbeat_execution(first.execution, first.claim_token)
        client.fail_execution(first.execution, first.claim_token, "boom", retryable=True)
        second = client.claim_execution("run-9", "k", tool_name="t", params={"x": 1})
        tokens.append(second.claim_token)
        client.release_execution(second.execution, second.claim_token)
        third = client.claim_execution("run-9", "k", tool_name="t", params={"x": 1})
        tokens.append(third.claim_token)
        client.cancel_execution(third.execution, "enough")
        assert client.heartbeat_execution(third.execution, third.claim_token).cancel_requested
        client.complete_execution(
            third.execution, third.claim_token, {"echo": third.claim_token[:4]}
        )
        client.get_execution(third.execution)

        def tool(ctx: ToolContext) -> str:
            tokens.append(ctx.claim_token)
            return "done"

        client.run_tool("run-9", "tool", tool_name="t", params={"y": 2}, fn=tool)
    finished = list(spans.get_finished_spans())
    kinds = {s.name for s in finished}
    expected = {"oncelog.fold_batch", "oncelog.heartbeat", "oncelog.cancel", "oncelog.run_tool"}
    assert expected <= kinds
    exported = "".join(everything_in(s) for s in finished)
    assert len(tokens) == 4
    for token in tokens:
        assert token not in exported
