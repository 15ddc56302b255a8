"""The span of one ledger call on the client: ``oncelog.<kind>``, around the send and the
wait for the decision, a child of whatever span is current (an agent framework's tool
span, say), so the ledger shows up inside the run that made the call."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

from oncelog.errors import LedgerError
from oncelog.schemas.models import Decision, Request
from oncelog.tracing import attributes
from oncelog.tracing.otel import tracer

if TYPE_CHECKING:
    from contextvars import Token

    from opentelemetry.context.context import Context
    from opentelemetry.trace import Span


class CallSpan:
    """The current span of a call sending ``request`` to ``topic``, as a context manager;
    a typed error that leaves it sets ``error.type`` to the error's stable code, and any
    error is recorded on it and sets its status, as ``start_as_current_span`` does.

    The attributes are worked out once, as the span ends, and only for a span that
    records: a sampler that drops the trace costs the call no more than the span itself
    (so a sampler sees none of them), and one call sets them all at once.
    """

    __slots__ = ("_decision", "_payloads", "_request", "_token", "_topic", "span")

    def __init__(self, request: Request, topic: str, *, payloads: bool) -> None:
        self._request, self._topic, self._payloads = request, topic, payloads
        self._decision: Decision | None = None
        self._token: Token[Context] | None = None
        self.span: Span | None = None

    def __enter__(self) -> CallSpan:
        import opentelemetry.context as context_api  # noqa: PLC0415  # tracing on
        import opentelemetry.trace as trace_api  # noqa: PLC0415

        name = f"oncelog.{self._request.kind.value}"
        self.span = span = tracer().start_span(name, kind=trace_api.SpanKind.CLIENT)
        self._token = context_api.attach(trace_api.set_span_in_context(span))
        return self

    def decided(self, decision: Decision) -> Decision:
        """Note what the fold decided, for the span's attributes; returns ``decision``."""
        self._decision = decision
        return decision

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        import opentelemetry.context as context_api  # noqa: PLC0415  # tracing on

        span, token = self.span, self._token
        if span is None or token is None:  # never entered
            return
        context_api.detach(token)
        if span.is_recording():
            span.set_attributes(self._attributes(error))
            if isinstance(error, Exception):  # not GeneratorExit and the like
                _failed(span, error)
        span.end()

    def _attributes(self, error: BaseException | None) -> attributes.Attributes:
        payloads, decision = self._payloads, self._decision
        # A decided state names the execution's key (of_decision's, for a claim that met
        # another's too): the request's would be worked out only to be replaced.
        key = decision is None or decision.state is None
        attrs = attributes.of_request(self._request, self._topic, payloads=payloads, key=key)
        if decision is not None:
            attrs.update(attributes.of_decision(decision, payloads=payloads))
        if isinstance(error, LedgerError):
            attrs[attributes.ERROR_TYPE] = error.code
        return attrs


def _failed(span: Span, error: Exception) -> None:
    from opentelemetry.trace import Status, StatusCode  # noqa: PLC0415  # tracing on

    span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
