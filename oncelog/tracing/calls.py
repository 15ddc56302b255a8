"""The span of one ledger call on the client: ``oncelog.<kind>``, around the send and the
wait for the decision, a child of whatever span is current (an agent framework's tool
span, say), so the ledger shows up inside the run that made the call."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from oncelog.errors import LedgerError
from oncelog.schemas.models import Decision, Request
from oncelog.tracing import attributes
from oncelog.tracing.otel import tracer

if TYPE_CHECKING:
    from opentelemetry.trace import Span


@contextmanager
def ledger_call(request: Request, topic: str, *, payloads: bool) -> Iterator[Span]:
    """The current span of a call sending ``request`` to ``topic``; a typed error that
    leaves it sets ``error.type`` to the error's stable code.

    The attributes are worked out only for a span that records: a sampler that drops the
    trace costs the call no more than the span itself (so a sampler sees none of them)."""
    from opentelemetry.trace import SpanKind  # noqa: PLC0415  # tracing on

    name = f"oncelog.{request.kind.value}"
    with tracer().start_as_current_span(name, kind=SpanKind.CLIENT) as span:
        if span.is_recording():
            span.set_attributes(attributes.of_request(request, topic, payloads=payloads))
        try:
            yield span
        except LedgerError as exc:
            span.set_attribute(attributes.ERROR_TYPE, exc.code)
            raise


def decided(span: Span, decision: Decision, *, payloads: bool) -> Decision:
    """Note what the fold decided on the call's span (if it records); returns ``decision``."""
    if span.is_recording():
        span.set_attributes(attributes.of_decision(decision, payloads=payloads))
    return decision
