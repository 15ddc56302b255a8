"""OpenTelemetry traces of the ledger, through ``opentelemetry-api`` only (the ``otel`` extra).

Nothing here is on unless the process has a tracer provider: an OpenTelemetry SDK that
the application set up, or ``opentelemetry-instrument``. Then every ledger call is a span
(``oncelog.claim``, ``oncelog.complete``, ...), ``run_tool`` is one around the claim, the
tool and the completion, each request record carries the caller's W3C ``traceparent``
header, the projector's span of the batch that folded it links to the caller's, and the
decision carries that span's context back. See ``docs/tracing.md``.

- :mod:`.otel`: whether this process traces, and the tracer;
- :mod:`.attributes`: the attribute names and what a request or a decision says;
- :mod:`.propagation`: the ``traceparent`` header of a record, written and read;
- :mod:`.calls`: the span of one ledger call on the client;
- :mod:`.batch_spans`: the projector's span of a folded batch.
"""

from oncelog.tracing.otel import active

__all__ = ["active"]
