"""The trace context of a record: W3C ``traceparent`` (and ``tracestate``) Kafka headers.

A request record carries its caller's context; a decision record carries the context of
the projector's span that folded its request. Always the W3C format, whatever propagator
the application configured globally: the headers are part of the ledger's records, and
nothing else (no baggage) goes into them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from oncelog.tracing.otel import active

if TYPE_CHECKING:
    from opentelemetry.trace import Span, SpanContext
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

TRACEPARENT: Final = "traceparent"
TRACESTATE: Final = "tracestate"
Headers = list[tuple[str, bytes]]
HeaderValue = str | bytes | None
#: What confluent-kafka's ``Message.headers()`` gives (a header's value may be None).
RecordHeaders = Sequence[tuple[str, HeaderValue]] | Mapping[str, HeaderValue]

# W3C Trace Context: version-traceid-parentid-flags, lowercase hex; a later version may
# append fields, version 00 may not, and ff is never valid.
_TRACEPARENT_FORMAT: Final = re.compile(
    r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?"
)
# The W3C limit a vendor must propagate at least: 512 printable ASCII characters.
_TRACESTATE_FORMAT: Final = re.compile(r"[\x20-\x7e]{1,512}")


@functools.cache
def _w3c() -> TraceContextTextMapPropagator:
    from opentelemetry.trace.propagation.tracecontext import (  # noqa: PLC0415  # tracing on
        TraceContextTextMapPropagator,
    )

    return TraceContextTextMapPropagator()


def current_headers() -> Headers | None:
    """The current span's context as record headers; None when tracing is off or no span
    is current (nothing to carry)."""
    if not active():
        return None
    carrier: dict[str, str] = {}
    _w3c().inject(carrier)
    return [(name, value.encode()) for name, value in carrier.items()] or None


def caller_headers(traceparent: str | None, tracestate: str | None) -> Headers | None:
    """An HTTP caller's W3C context (its ``traceparent`` and ``tracestate`` headers) as
    record headers, written as version 00; None when it sent none or a malformed one.

    Checked here, without OpenTelemetry (a ``serve`` without the ``otel`` extra still
    carries its callers' contexts to a projector that traces): a header is the sender's
    word, so a bad one is ignored, never raised, and a bad ``tracestate`` alone is dropped.
    """
    found = _TRACEPARENT_FORMAT.fullmatch((traceparent or "").strip(" \t"))
    if found is None:
        return None
    version, trace_id, span_id, flags, more = found.groups()
    if version == "ff" or (version == "00" and more) or _zero(trace_id) or _zero(span_id):
        return None
    headers = [(TRACEPARENT, f"00-{trace_id}-{span_id}-{flags}".encode())]
    state = (tracestate or "").strip(" \t")
    if _TRACESTATE_FORMAT.fullmatch(state):
        headers.append((TRACESTATE, state.encode()))
    return headers


def _zero(hex_id: str) -> bool:
    return not int(hex_id, 16)  # the W3C invalid id: all zeros


def headers_of(span: Span) -> Headers:
    """``span``'s context as record headers."""
    from opentelemetry import trace  # noqa: PLC0415  # tracing on

    carrier: dict[str, str] = {}
    _w3c().inject(carrier, context=trace.set_span_in_context(span))
    return [(name, value.encode()) for name, value in carrier.items()]


def _pairs(headers: RecordHeaders) -> Iterable[tuple[str, HeaderValue]]:
    return headers.items() if isinstance(headers, Mapping) else headers


def _text(value: HeaderValue) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value or ""


def traceparent_of(headers: RecordHeaders | None) -> bytes | None:
    """The ``traceparent`` header's value among a record's headers, if any."""
    for name, value in _pairs(headers or ()):
        if name == TRACEPARENT and value:
            return value if isinstance(value, bytes) else value.encode()
    return None


def context_of(headers: RecordHeaders | None) -> SpanContext | None:
    """The (remote) span context a record's headers carry; None when they carry none or a
    malformed one (a header is the sender's word: a bad one is ignored, never raised)."""
    if not headers:
        return None
    carrier = {
        name: _text(value)
        for name, value in _pairs(headers)
        if value and name in (TRACEPARENT, TRACESTATE)
    }
    if TRACEPARENT not in carrier:
        return None
    from opentelemetry import trace  # noqa: PLC0415  # tracing on

    found = trace.get_current_span(_w3c().extract(carrier)).get_span_context()
    return found if found.is_valid else None


def link_current(traceparent: bytes | None, role: str) -> None:
    """Link the current span to the span a ``traceparent`` names (``oncelog.link.role``)."""
    context = context_of([(TRACEPARENT, traceparent)]) if traceparent else None
    if context is not None:
        from opentelemetry import trace  # noqa: PLC0415  # tracing on

        trace.get_current_span().add_link(context, {"oncelog.link.role": role})
