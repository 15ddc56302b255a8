"""The real OpenTelemetry SDK as this process's tracer provider, spans kept in memory.

Set for each test that asks for it and unset after: the rest of the suite runs with tracing
off, as an application without a provider does, and pays no span for its many calls.
OpenTelemetry sets a global provider once a process; unsetting it is what its own tests do
(``opentelemetry.test.globals_test.reset_trace_globals``). One provider for the session, so
that a proxy tracer taken at import (``trace.get_tracer`` before any provider) still
reaches it: a proxy keeps the first real tracer it found.
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
from opentelemetry.util._once import Once

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


PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(_EXPORTER))
PROVIDER.add_span_processor(FANOUT)


def _set_global(provider: TracerProvider | None) -> None:
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    trace._TRACER_PROVIDER = None
    if provider is not None:
        trace.set_tracer_provider(provider)


@pytest.fixture
def tracer_provider() -> Iterator[TracerProvider]:
    """The SDK provider, set as this process's for the test and unset after it."""
    _set_global(PROVIDER)
    try:
        yield PROVIDER
    finally:
        _set_global(None)


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
