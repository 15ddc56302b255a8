"""The real OpenTelemetry SDK as this process's tracer provider, spans kept in memory.

OpenTelemetry lets a process set its global provider once: the first test that asks for
``spans`` sets it, for the rest of the session (tracing must change no ledger behaviour,
so the tests that run after it on this worker still hold).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_EXPORTER = InMemorySpanExporter()


class Fanout(SpanProcessor):
    """Span processors that tests add and remove (a provider's own list only grows)."""

    def __init__(self) -> None:
        self.processors: list[SpanProcessor] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        for processor in list(self.processors):
            processor.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        for processor in list(self.processors):
            processor.on_end(span)


FANOUT = Fanout()


@pytest.fixture(scope="session")
def tracer_provider() -> TracerProvider:
    """The process's SDK provider (set here once), exporting to memory."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        provider.add_span_processor(FANOUT)
        trace.set_tracer_provider(provider)
    return provider


@pytest.fixture
def spans(tracer_provider: TracerProvider) -> Iterator[InMemorySpanExporter]:
    """The spans finished during this test (SimpleSpanProcessor: exported at their end)."""
    _EXPORTER.clear()
    yield _EXPORTER
    _EXPORTER.clear()


def named(finished: Iterable[ReadableSpan], name: str) -> list[ReadableSpan]:
    """The finished spans called ``name``."""
    return [s for s in finished if s.name == name]


def one(finished: Iterable[ReadableSpan], name: str) -> ReadableSpan:
    """The one finished span called ``name``."""
    found = named(finished, name)
    assert len(found) == 1, f"{len(found)} spans named {name}: {[s.name for s in finished]}"
    return found[0]


def everything_in(span: ReadableSpan) -> str:
    """All a span says (name, attributes, events, links, resource) as exported JSON."""
    return str(span.to_json(indent=None)) + json.dumps([str(s) for s in span.links])
