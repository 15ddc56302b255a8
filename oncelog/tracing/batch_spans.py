"""The projector's spans of a folded batch, for the requests that carry a caller's context.

One ``oncelog.fold_batch`` span (a consumer span over the fold) per poll batch holding a
request whose caller's trace is sampled, **linked** to each such caller's span, not
parented: a batch folds the requests of many callers, and a caller's trace should not grow
a projector's batch. Each link says which request it is and what the fold decided; each
of those decisions carries the batch span's context back. A span per batch, not per
request, keeps what tracing costs ``serve`` near a span's cost per poll.

The spans are made after the fold returns, from what it decided: tracing observes the
fold and never steers it (the fold's modules import none of this).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Protocol

from oncelog.schemas.models import Decision, Request
from oncelog.tracing import attributes
from oncelog.tracing.otel import tracer
from oncelog.tracing.propagation import Headers, headers_of, sampled_context_of

if TYPE_CHECKING:
    from confluent_kafka import Message
    from opentelemetry.trace import Link, SpanContext

#: Per folded request, by (partition, offset): the headers its decision carries back.
DecisionHeaders = dict[tuple[int, int], Headers]

#: Links per batch span: the SDK's default limit (``OTEL_SPAN_LINK_COUNT_LIMIT``); a batch
#: with more sampled callers gets one span per this many.
LINKS_PER_SPAN: Final = 128
#: A link's role: the caller whose request the batch folded.
ROLE: Final = "oncelog.link.role"


class TracedRequest(Protocol):
    """One folded request and its decision (the projector's audit entry)."""

    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def request(self) -> Request: ...
    @property
    def decision(self) -> Decision: ...


def callers_of(messages: Sequence[Message]) -> dict[tuple[int, int], SpanContext]:
    """The caller's span context of each record that carries a sampled one, by (partition,
    offset): a caller whose trace is not recorded gets no link into it, and costs no
    object here (its flags are read before one is made)."""
    callers: dict[tuple[int, int], SpanContext] = {}
    for msg in messages:
        context = sampled_context_of(msg.headers())
        if context is not None:
            callers[(msg.partition() or 0, msg.offset() or 0)] = context
    return callers


def batch_spans(
    messages: Sequence[Message],
    folded: Sequence[TracedRequest],
    topic: str,
    window_ns: tuple[int, int],
) -> DecisionHeaders | None:
    """Record the batch's fold span(s) over ``window_ns`` (start, end; epoch ns); the
    headers of each traced request's decision, or None when no record was traced or this
    process's sampler dropped the batch."""
    callers = callers_of(messages)
    if not callers:
        return None
    traced = [e for e in folded if (e.partition, e.offset) in callers]
    back: DecisionHeaders = {}
    for first in range(0, len(traced), LINKS_PER_SPAN):
        chunk = traced[first : first + LINKS_PER_SPAN]
        headers = _batch_span(chunk, callers, topic, len(messages), window_ns)
        if headers is not None:
            back.update(((e.partition, e.offset), headers) for e in chunk)
    return back or None


def _batch_span(
    chunk: Sequence[TracedRequest],
    callers: dict[tuple[int, int], SpanContext],
    topic: str,
    count: int,
    window_ns: tuple[int, int],
) -> Headers | None:
    """One ``oncelog.fold_batch`` span linked to the callers of ``chunk``; its context as
    headers, or None when the sampler dropped it."""
    from opentelemetry import trace  # noqa: PLC0415  # tracing on

    start, end = window_ns
    links = [_link(trace.Link, e, callers[(e.partition, e.offset)]) for e in chunk]
    span = tracer().start_span(
        "oncelog.fold_batch",
        kind=trace.SpanKind.CONSUMER,
        links=links,
        start_time=start,
        attributes={
            attributes.MESSAGING_SYSTEM: "kafka",
            attributes.DESTINATION: topic,
            attributes.OPERATION_TYPE: "process",
            attributes.BATCH_COUNT: count,
        },
    )
    if not span.is_recording():
        return None
    span.end(end_time=end)
    return headers_of(span)


def _link(make: type[Link], entry: TracedRequest, caller: SpanContext) -> Link:
    """The link to ``entry``'s caller: which request it is and what the fold decided (the
    call's own span holds the rest)."""
    request, decision = entry.request, entry.decision
    return make(
        caller,
        {
            ROLE: "caller",
            attributes.OPERATION_ID: request.operation_id,
            attributes.KIND: request.kind.value,
            attributes.PARTITION: str(entry.partition),
            attributes.OFFSET: entry.offset,
            attributes.OUTCOME: decision.outcome.value,
        },
    )
