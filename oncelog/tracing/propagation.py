"""The trace context of a record: W3C ``traceparent`` (and ``tracestate``) Kafka headers.

A request record carries its caller's context; a decision record carries the context of
the projector's span that folded its request. Always the W3C format, whatever propagator
the application configured globally: the headers are part of the ledger's records, and
nothing else (no baggage) goes into them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from oncelog.tracing.otel import active

if TYPE_CHECKING:
    from opentelemetry.trace import Span, SpanContext

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
# What the W3C propagator of opentelemetry-api reads: blanks around, a later version's
# fields after, and its length limits.
_PROPAGATED_FORMAT: Final = re.compile(
    r"[ \t]*([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:(-.*)|[ \t]*)"
)
_MAX_TRACEPARENT: Final = 512
_MAX_TRACESTATE: Final = 512
# What this library writes (``_headers``), byte for byte: version 00, lowercase hex, no
# blanks. A header of exactly this form reads the same through the general path below
# (the property tests hold the two equal); it skips that path's text decoding and groups.
_WRITTEN_FORMAT: Final = re.compile(rb"00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")
_WRITTEN_LENGTH: Final = 55
#: The attribute of a call span's link that says what the linked span is.
_LINK_ROLE: Final = "oncelog.link.role"


def current_headers() -> Headers | None:
    """The current span's context as record headers; None when tracing is off or no span
    is current (nothing to carry)."""
    if not active():
        return None
    import opentelemetry.trace as trace_api  # noqa: PLC0415  # tracing on

    return _headers(trace_api.get_current_span().get_span_context()) or None


def _headers(context: SpanContext) -> Headers:
    """``context`` as W3C headers, written as the W3C propagator writes them (version 00,
    ``tracestate`` only when there is one) without its context and carrier round trip;
    none for an invalid context."""
    if not context.is_valid:
        return []
    parent = f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"
    headers = [(TRACEPARENT, parent.encode())]
    if context.trace_state:
        headers.append((TRACESTATE, context.trace_state.to_header().encode()))
    return headers


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
    return _headers(span.get_span_context())


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


def written_context(value: bytes, *, sampled_only: bool = False) -> SpanContext | None:
    """The context of one ``traceparent`` value as :func:`context_of` reads it from a record
    whose only trace header it is; ``sampled_only``: None for an unsampled one, told from
    its flags before any object is made (the projector links only to sampled callers)."""
    if len(value) != _WRITTEN_LENGTH or _WRITTEN_FORMAT.fullmatch(value) is None:
        return _read(value.decode("latin-1"), None, sampled_only=sampled_only)
    flags = int(value[53:55], 16)
    if sampled_only and not flags & 1:
        return None
    trace_id, span_id = int(value[3:35], 16), int(value[36:52], 16)
    if not trace_id or not span_id:
        return None
    import opentelemetry.trace as trace_api  # noqa: PLC0415  # tracing on

    return trace_api.SpanContext(
        trace_id, span_id, is_remote=True, trace_flags=trace_api.TraceFlags(flags)
    )


def sampled_context_of(headers: RecordHeaders | None) -> SpanContext | None:
    """:func:`context_of`, but None for a context whose trace is not sampled: the
    projector's question per record. A record with one ``traceparent`` as this library
    writes it and no ``tracestate`` (every SDK request) takes :func:`written_context`."""
    if not headers:
        return None
    if isinstance(headers, list) and len(headers) == 1:
        name, value = headers[0]
        if name == TRACEPARENT and isinstance(value, bytes) and value:
            return written_context(value, sampled_only=True)
    parent, state = _carried(headers)
    return None if parent is None else _read(parent, state, sampled_only=True)


def context_of(headers: RecordHeaders | None) -> SpanContext | None:
    """The (remote) span context a record's headers carry; None when they carry none or a
    malformed one (a header is the sender's word: a bad one is ignored, never raised).

    Read as the W3C propagator reads a carrier (the last of repeated headers, its format
    and length limits), but straight into a span context: the projector asks this of every
    record of a traced batch."""
    parent, state = _carried(headers)
    return None if parent is None else _read(parent, state)


def _read(parent: str, state: str | None, *, sampled_only: bool = False) -> SpanContext | None:
    """A ``traceparent`` (and ``tracestate``) header's context, or None: see :func:`context_of`."""
    if len(parent) > _MAX_TRACEPARENT:
        return None
    found = _PROPAGATED_FORMAT.fullmatch(parent)
    if found is None:
        return None
    version, trace_id, span_id, flags, more = found.groups()
    if version == "ff" or (version == "00" and more) or _zero(trace_id) or _zero(span_id):
        return None
    if sampled_only and not int(flags, 16) & 1:
        return None
    import opentelemetry.trace as trace_api  # noqa: PLC0415  # tracing on

    carried = None if state is None or len(state) > _MAX_TRACESTATE else [state]
    return trace_api.SpanContext(
        int(trace_id, 16),
        int(span_id, 16),
        is_remote=True,
        trace_flags=trace_api.TraceFlags(int(flags, 16)),
        trace_state=None if carried is None else trace_api.TraceState.from_header(carried),
    )


def _carried(headers: RecordHeaders | None) -> tuple[str | None, str | None]:
    """The (last non-empty) ``traceparent`` and ``tracestate`` among ``headers``."""
    parent = state = None
    for name, value in _pairs(headers or ()):
        if not value:
            continue
        if name == TRACEPARENT:
            parent = _text(value)
        elif name == TRACESTATE:
            state = _text(value)
    return parent, state


def link_current(traceparent: bytes | None, role: str) -> None:
    """Link the current span to the span a ``traceparent`` names (``oncelog.link.role``)."""
    context = written_context(traceparent) if traceparent else None
    if context is not None:
        import opentelemetry.trace as trace_api  # noqa: PLC0415  # tracing on

        trace_api.get_current_span().add_link(context, {_LINK_ROLE: role})
