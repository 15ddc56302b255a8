"""The ``traceparent`` header, written and read: pure logic, properties over any input."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from oncelog.tracing.propagation import TRACEPARENT, context_of, headers_of, traceparent_of
from tests.budget import examples

ids = st.tuples(st.integers(1, 2**128 - 1), st.integers(1, 2**64 - 1), st.booleans())
header_values = st.one_of(st.none(), st.binary(max_size=80), st.text(max_size=80))


@settings(max_examples=examples(500))
@given(ids)
def test_a_span_context_survives_its_headers(span_ids: tuple[int, int, bool]) -> None:
    trace_id, span_id, sampled = span_ids
    flags = TraceFlags(TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT)
    span = NonRecordingSpan(SpanContext(trace_id, span_id, is_remote=False, trace_flags=flags))
    headers = headers_of(span)
    back = context_of(headers)
    assert back is not None
    assert (back.trace_id, back.span_id, back.trace_flags.sampled) == (trace_id, span_id, sampled)
    assert traceparent_of(headers) == dict(headers)[TRACEPARENT]


@settings(max_examples=examples(2000))
@given(st.lists(st.tuples(st.sampled_from([TRACEPARENT, "tracestate", "other"]), header_values)))
def test_any_headers_read_as_a_valid_context_or_none(
    headers: list[tuple[str, str | bytes | None]],
) -> None:
    """A header is the sender's word: a malformed one is ignored, never raised."""
    found = context_of(headers)
    assert found is None or (found.is_valid and found.is_remote)
