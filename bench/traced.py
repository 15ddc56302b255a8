"""Tracing on for a benchmark: ``ONCELOG_BENCH_TRACING=1`` (``bench.peers --tracing``;
:func:`bench.common.tracing_wanted`).

The OpenTelemetry SDK as the process's tracer provider, with the batch processor an
application would use and an exporter that drops every span: the figure is what making
and propagating spans costs oncelog, not a collector's network I/O.

    python -m bench.traced serve --no-http     # ``oncelog serve``, traced the same way
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult


class Dropped(SpanExporter):
    """Counts the spans handed to it and keeps none."""

    def __init__(self) -> None:
        self.count = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Drop ``spans``."""
        self.count += len(spans)
        return SpanExportResult.SUCCESS


def install() -> Dropped:
    """Set the SDK provider (once a process) with a batch processor over :class:`Dropped`."""
    dropped = Dropped()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(dropped))
    trace.set_tracer_provider(provider)
    return dropped


if __name__ == "__main__":
    install()
    sys.argv = ["oncelog", *sys.argv[1:]]
    runpy.run_module("oncelog", run_name="__main__", alter_sys=True)
