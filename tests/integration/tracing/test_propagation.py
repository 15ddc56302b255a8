"""The ``traceparent`` header, written and read: pure logic, properties over any input."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    TraceFlags,
    TraceState,
    get_current_span,
    set_span_in_context,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from oncelog.tracing.propagation import (
    TRACEPARENT,
    TRACESTATE,
    context_of,
    headers_of,
    sampled_context_of,
    traceparent_of,
    written_context,
)
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


def _w3c_context(headers: list[tuple[str, str]]) -> SpanContext | None:
    """What opentelemetry-api's W3C propagator reads from the same headers."""
    carrier = {name: value for name, value in headers if value}
    found = get_current_span(TraceContextTextMapPropagator().extract(carrier))
    context = found.get_span_context()
    return context if context.is_valid else None


hexes = st.text("0123456789abcdefA ", min_size=0, max_size=34)
traceparents = st.builds(
    lambda blank, version, trace_id, span_id, flags, more: (
        f"{blank}{version}-{trace_id}-{span_id}-{flags}{more}"
    ),
    st.sampled_from(["", " ", "\t"]),
    st.sampled_from(["00", "01", "ff", "0g"]),
    st.one_of(st.just("0" * 32), st.just("4bf92f3577b34da6a3ce929d0e0e4736"), hexes),
    st.one_of(st.just("0" * 16), st.just("00f067aa0ba902b7"), hexes),
    st.sampled_from(["00", "01", "03", "1"]),
    st.sampled_from(["", " ", "-", "-x", "\t", "-" + "y" * 600]),
)
tracestates = st.sampled_from(["", "a=1", "a=1,b=2", "bad key", "k=" + "v" * 600])


@settings(max_examples=examples(2000))
@given(st.lists(st.one_of(st.tuples(st.just(TRACEPARENT), traceparents),
                          st.tuples(st.just(TRACESTATE), tracestates)), max_size=3))  # fmt: skip
def test_headers_read_as_the_w3c_propagator_reads_them(headers: list[tuple[str, str]]) -> None:
    """The direct reading the projector does per record agrees with the API's propagator."""
    found, expected = context_of(headers), _w3c_context(headers)
    assert found == expected
    if found is not None and expected is not None:
        assert found.trace_state == expected.trace_state


@settings(max_examples=examples(500))
@given(ids, tracestates)
def test_headers_are_written_as_the_w3c_propagator_writes_them(
    span_ids: tuple[int, int, bool], state: str
) -> None:
    trace_id, span_id, sampled = span_ids
    flags = TraceFlags(TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT)
    context = SpanContext(trace_id, span_id, False, flags, TraceState.from_header([state]))
    carrier: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(carrier, set_span_in_context(NonRecordingSpan(context)))
    assert headers_of(NonRecordingSpan(context)) == [(k, v.encode()) for k, v in carrier.items()]


def _sampled(headers: list[tuple[str, str | bytes | None]]) -> SpanContext | None:
    found = context_of(headers)
    return found if found is not None and found.trace_flags.sampled else None


TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
written_headers = st.builds(
    lambda trace_id, span_id, flags: f"00-{trace_id}-{span_id}-{flags}".encode(),
    st.sampled_from(["0" * 32, TRACE_ID, TRACE_ID.upper()]),
    st.sampled_from(["0" * 16, "00f067aa0ba902b7", "00f067aa0ba9_2b7"]),
    st.sampled_from(["00", "01", "03", "ff", "0g", "+1"]),
)
one_header_values = st.one_of(written_headers, st.binary(max_size=60), traceparents.map(str.encode))


@settings(max_examples=examples(2000))
@given(one_header_values)
def test_a_written_traceparent_reads_as_the_general_reader_reads_it(value: bytes) -> None:
    """The short path (a record's one header, as this library writes it) agrees with the
    general one on any value, near misses included (upper case, an underscore, a sign)."""
    assert written_context(value) == context_of([(TRACEPARENT, value)])
    assert written_context(value, sampled_only=True) == _sampled([(TRACEPARENT, value)])


@settings(max_examples=examples(2000))
@given(
    st.one_of(
        st.lists(st.tuples(st.sampled_from([TRACEPARENT, TRACESTATE, "other"]), header_values)),
        one_header_values.map(lambda value: [(TRACEPARENT, value)]),
    )
)
def test_the_projector_reads_a_sampled_context_or_none(
    headers: list[tuple[str, str | bytes | None]],
) -> None:
    """What the projector links to: the context a record carries, only when sampled."""
    found = sampled_context_of(headers)
    assert found == _sampled(headers)
    if found is not None:
        assert found.trace_state == context_of(headers).trace_state  # type: ignore[union-attr]
