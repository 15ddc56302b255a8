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
from typing import TYPE_CHECKING, Protocol

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
    """The caller's span context of each record that carries one, by (partition, offset)."""
    callers: dict[tuple[int, int], SpanContext] = {}
    for msg in messages:
        context = context_of(msg.headers())
        if context is not None:
            callers[(msg.partition() or 0, msg.offset() or 0)] = context
    return callers


def batch_spans(
    messages: Sequence[Message],
    folded: Sequence[TracedRequest],
    topic: str,
    window_ns: tuple[int, int],
) -> DecisionHeaders | None:
    """Record the batch's fold spans over ``window_ns`` (start, end; epoch ns); the
    headers of each traced request's decision, or None when no record was traced."""
    callers = callers_of(messages)
    if not callers:
        return None
    from opentelemetry import trace  # noqa: PLC0415  # tracing on

    start, end = window_ns
    consumer = trace.SpanKind.CONSUMER
    batch = tracer().start_span(
        "oncelog.fold_batch",
        kind=consumer,
        start_time=start,
        attributes={
            attributes.MESSAGING_SYSTEM: "kafka",
            attributes.DESTINATION: topic,
            attributes.OPERATION_TYPE: "process",
            attributes.BATCH_COUNT: len(messages),
        },
    )
    parent = trace.set_span_in_context(batch)
    back: DecisionHeaders = {}
    for entry in folded:
        where = (entry.partition, entry.offset)
        caller = callers.get(where)
        if caller is None:
            continue
        attrs = attributes.of_request(entry.request, topic, payloads=False)
        attrs[attributes.OPERATION_TYPE] = "process"
        attrs.update(attributes.of_decision(entry.decision, payloads=False))
        span = tracer().start_span(
            "oncelog.fold",
            context=parent,
            kind=consumer,
            links=[trace.Link(caller, {"oncelog.link.role": "caller"})],
            start_time=start,
            attributes=attrs,
        )
        span.end(end_time=end)
        back[where] = headers_of(span)
    batch.end(end_time=end)
    return back
