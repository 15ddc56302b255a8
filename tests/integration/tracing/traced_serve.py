"""``oncelog serve`` with the OpenTelemetry SDK set, its spans one JSON a line in a file:

    python -m tests.integration.tracing.traced_serve SPANS.jsonl serve --no-http

The projector in a process of its own, as deployed, for test_fold_link_across_processes.
"""

from __future__ import annotations

import runpy
import sys

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor


def main() -> None:
    """Set the provider (spans to the file named first), then run ``oncelog`` on the rest."""
    path, *args = sys.argv[1:]
    out = open(path, "a", buffering=1)  # noqa: SIM115  # open until the process exits
    exporter = ConsoleSpanExporter(out=out, formatter=lambda s: s.to_json(indent=None) + "\n")
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    sys.argv = ["oncelog", *args]
    runpy.run_module("oncelog", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
