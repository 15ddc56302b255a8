"""The projector's spans of a folded batch, for the requests that carry a caller's context.

One ``oncelog.fold_batch`` span per poll batch (a consumer span over the fold), and under
it one ``oncelog.fold`` span per traced request, **linked** to its caller's span, not
parented: a batch folds the requests of many callers, and a caller's trace should not
grow a projector's batch. Each decision then carries its fold span's context back.

The spans are made after the fold returns, from what it decided: tracing observes the
fold and never steers it (the fold's modules import none of this).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Protocol

from oncelog.schemas.models import Decision, Request
from oncelog.tracing import attributes
from oncelog.tracing.otel import tracer
from oncelog.tracing.propagation import Headers, context_of, headers_of

if TYPE_CHECKING:
    from confluent_kafka import Message
    from opentelemetry.trace import SpanContext

#: Per folded request, by (partition, offset): the headers its decision carries back.
DecisionHeaders = dict[tuple[int, int], Headers]


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
    offset): a caller whose trace is not recorded gets no fold span to link into it."""
    callers: dict[tuple[int, int], SpanContext] = {}
    for msg in messages:
        context = context_of(msg.headers())
        if context is not None and context.trace_flags.sampled:
            callers[(msg.partition() or 0, msg.offset() or 0)] = context
    return callers


def batch_spans(
    messages: Sequence[Message],
    folded: Sequence[TracedRequest],
    topic: str,
    window_ns: tuple[int, int],
) -> DecisionHeaders | None:
    """Record the batch's fold spans over ``window_ns`` (start, end; epoch ns); the
    headers of each traced request's decision, or None when no record was traced or this
    process's sampler dropped the batch (then no fold span is made either)."""
    callers = callers_of(messages)
    if not callers:
        return None
    from opentelemetry import trace  # noqa: PLC0415  # tracing on

    start, end = window_ns
    spans = tracer()
    batch = spans.start_span(
        "oncelog.fold_batch",
        kind=trace.SpanKind.CONSUMER,
        start_time=start,
        attributes={
            attributes.MESSAGING_SYSTEM: "kafka",
            attributes.DESTINATION: topic,
            attributes.OPERATION_TYPE: "process",
            attributes.BATCH_COUNT: len(messages),
        },
    )
    if not batch.is_recording():
        return None
    parent = trace.set_span_in_context(batch)
    back: DecisionHeaders = {}
    for entry in folded:
        where = (entry.partition, entry.offset)
        caller = callers.get(where)
        if caller is not None:
            span = spans.start_span(
                "oncelog.fold",
                context=parent,
                kind=trace.SpanKind.CONSUMER,
                links=[trace.Link(caller, _CALLER)],
                start_time=start,
                attributes=_fold_attributes(entry, topic),
            )
            span.end(end_time=end)
            back[where] = headers_of(span)
    batch.end(end_time=end)
    return back


#: The attributes of a fold span's link to its caller's span.
_CALLER: Final = {"oncelog.link.role": "caller"}


def _fold_attributes(entry: TracedRequest, topic: str) -> attributes.Attributes:
    """What a fold span says: the request, then its decision (which names the idempotency
    key of the state it left, so the request's own is not worked out first)."""
    decision = entry.decision
    attrs = attributes.of_request(entry.request, topic, payloads=False, key=decision.state is None)
    attrs[attributes.OPERATION_TYPE] = "process"
    attrs.update(attributes.of_decision(decision, payloads=False))
    return attrs
