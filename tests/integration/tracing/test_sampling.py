"""Unsampled traces cost no attributes and no fold spans: pure logic on the SDK, no Kafka."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from oncelog.identity import ids
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.schemas.models import Claim, Decision, Request
from oncelog.testing import InMemoryLedger
from oncelog.tracing import attributes, calls
from oncelog.tracing import batch_spans as batch_spans_module
from oncelog.tracing.batch_spans import LINKS_PER_SPAN, batch_spans
from oncelog.tracing.propagation import TRACEPARENT, Headers, headers_of

TOPIC = "requests"


@dataclass(frozen=True)
class Folded:
    """A folded request as the projector's audit entry shows it to ``batch_spans``."""

    partition: int
    offset: int
    request: Request
    decision: Decision


@dataclass(frozen=True)
class Record:
    """What ``batch_spans`` reads of a consumed record."""

    at: int
    carried: Headers

    def headers(self) -> Headers:
        return self.carried

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self.at


def _caller(span_id: int, *, sampled: bool) -> Headers:
    flags = "01" if sampled else "00"
    return [(TRACEPARENT, f"00-{'ab' * 16}-{span_id:016x}-{flags}".encode())]


@pytest.fixture
def claimed() -> Iterator[tuple[Request, Decision]]:
    """A claim request and the in-memory ledger's decision on it."""
    ledger = InMemoryLedger(partitions=2)
    with SyncLedgerClient(ledger.settings, transport=ledger) as client:
        request = client.requests.claim_execution("run-s", "k", tool_name="t", params={}).request
        yield request, ledger.call(request)


def test_only_sampled_callers_get_fold_spans(
    spans: InMemorySpanExporter, claimed: tuple[Request, Decision]
) -> None:
    request, decision = claimed
    records = [Record(0, _caller(1, sampled=True)), Record(1, _caller(2, sampled=False))]
    folded = [Folded(0, r.at, request, decision) for r in records]
    back = batch_spans(records, folded, TOPIC, (1, 2))  # type: ignore[arg-type]
    assert back is not None
    assert set(back) == {(0, 0)}
    finished = spans.get_finished_spans()
    [fold] = [s for s in finished if s.name == "oncelog.fold_batch"]
    assert [link.context.span_id for link in fold.links] == [1]
    assert (fold.links[0].attributes or {})[attributes.OUTCOME] == decision.outcome.value
    assert back[(0, 0)] == headers_of(fold)  # type: ignore[arg-type]


def test_a_batch_of_many_callers_is_one_span_per_link_limit(
    spans: InMemorySpanExporter, claimed: tuple[Request, Decision]
) -> None:
    """One batch span for up to LINKS_PER_SPAN callers: none of their links is dropped."""
    request, decision = claimed
    count = LINKS_PER_SPAN + 2
    records = [Record(i, _caller(i + 1, sampled=True)) for i in range(count)]
    folded = [Folded(0, r.at, request, decision) for r in records]
    back = batch_spans(records, folded, TOPIC, (1, 2))  # type: ignore[arg-type]
    assert back is not None
    first, second = spans.get_finished_spans()
    assert [s.name for s in (first, second)] == ["oncelog.fold_batch"] * 2
    linked = [k.context.span_id for s in (first, second) for k in s.links]
    assert linked == list(range(1, count + 1))
    assert back[(0, 0)] == headers_of(first)  # type: ignore[arg-type]
    assert back[(0, count - 1)] == headers_of(second)  # type: ignore[arg-type]


def test_no_unsampled_caller_no_spans(
    spans: InMemorySpanExporter, claimed: tuple[Request, Decision]
) -> None:
    request, decision = claimed
    records = [Record(0, _caller(2, sampled=False))]
    folded = [Folded(0, 0, request, decision)]
    assert batch_spans(records, folded, TOPIC, (1, 2)) is None  # type: ignore[arg-type]
    assert not spans.get_finished_spans()


def test_a_call_span_that_does_not_record_works_out_no_attributes(
    spans: InMemorySpanExporter,
    claimed: tuple[Request, Decision],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request, decision = claimed
    asked: list[str] = []

    def counted(name: str) -> Any:
        real = getattr(attributes, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            asked.append(name)
            return real(*args, **kwargs)

        return call

    for name in ("of_request", "of_decision"):
        monkeypatch.setattr(attributes, name, counted(name))
    unsampled = SpanContext(7, 8, is_remote=True, trace_flags=TraceFlags(TraceFlags.DEFAULT))
    # Under an unsampled parent, the SDK's default sampler (parent-based) records nothing.
    with (
        trace.use_span(NonRecordingSpan(unsampled)),
        calls.CallSpan(request, TOPIC, payloads=False) as call,
    ):
        call.decided(decision)
    assert call.span is not None
    assert not call.span.is_recording()
    assert asked == []
    with calls.CallSpan(request, TOPIC, payloads=False) as call:  # a sampled root
        call.decided(decision)
    assert asked == ["of_request", "of_decision"]
    assert [s.name for s in spans.get_finished_spans()] == ["oncelog.claim"]


def test_a_batch_its_sampler_drops_makes_no_fold_span(
    spans: InMemorySpanExporter,
    claimed: tuple[Request, Decision],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """serve's own sampler said no to the batch: its sampled callers get no span either."""
    request, decision = claimed
    dropping = TracerProvider(sampler=ALWAYS_OFF)
    dropping.add_span_processor(SimpleSpanProcessor(spans))
    monkeypatch.setattr(batch_spans_module, "tracer", lambda: dropping.get_tracer("oncelog"))
    records = [Record(0, _caller(1, sampled=True))]
    folded = [Folded(0, 0, request, decision)]
    assert batch_spans(records, folded, TOPIC, (1, 2)) is None  # type: ignore[arg-type]
    assert not spans.get_finished_spans()


def test_a_call_span_names_the_key_of_the_state_or_else_of_the_request(
    spans: InMemorySpanExporter, claimed: tuple[Request, Decision]
) -> None:
    """Undecided (an error, a timeout), a claim's span carries its request's idempotency
    key; decided, the state's, which differs for a claim that met another's params."""
    request, decision = claimed
    assert decision.state is not None
    with calls.CallSpan(request, TOPIC, payloads=False):
        pass
    other = decision._replace(state=decision.state._replace(request_hash="f" * 64))
    with calls.CallSpan(request, TOPIC, payloads=False) as call:
        call.decided(other)
    undecided, conflicted = (s.attributes or {} for s in spans.get_finished_spans())
    assert isinstance(request.body, Claim)
    own = ids.idempotency_key(request.operation_id, request.body.request_hash)
    assert undecided[attributes.IDEMPOTENCY_KEY] == own
    assert conflicted[attributes.IDEMPOTENCY_KEY] == ids.idempotency_key(
        request.operation_id, "f" * 64
    )
