"""The executor's spans: ``oncelog.run_tool`` around a whole run (its claim, tool and
completion spans are children) and ``oncelog.tool`` around the user's function.

With tracing off (:func:`oncelog.tracing.active`, asked once a run) the run span is a
shared null context and the function is not wrapped.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from oncelog.identity import ids
from oncelog.producer.tool_model import AsyncToolFn, SyncToolFn, ToolContext, ToolJob, ToolRun
from oncelog.tracing import active, attributes
from oncelog.tracing.otel import tracer

if TYPE_CHECKING:
    from opentelemetry.trace import Span

_OFF: AbstractContextManager[None] = contextlib.nullcontext()


def run_span(job: ToolJob[Any, Any]) -> AbstractContextManager[Span | None]:
    """The span of one ``run_tool`` (None when tracing is off)."""
    return _run_span(job) if active() else _OFF


@contextlib.contextmanager
def _run_span(job: ToolJob[Any, Any]) -> Iterator[Span]:
    target = job.target
    key_name = target.key_name
    if key_name is None and target.step is not None:
        key_name = ids.step_key_name(target.step)
    attrs: attributes.Attributes = {
        attributes.TOOL: job.spec.tool_name,
        attributes.CHANNEL: target.channel_id,
        attributes.EFFECT: job.spec.effect,
    }
    if key_name is not None:
        attrs[attributes.KEY_NAME] = key_name
    with tracer().start_as_current_span("oncelog.run_tool", attributes=attrs) as span:
        yield span


def ran(span: Span | None, run: ToolRun) -> ToolRun:
    """Note how the run ended on its span; returns ``run``."""
    if span is not None:
        ex = run.execution
        span.set_attributes(
            {
                attributes.OUTCOME: run.status.value,
                attributes.STATUS: ex.status,
                attributes.OPERATION_ID: ex.id,
                attributes.IDEMPOTENCY_KEY: ex.idempotency_key,
                attributes.EPOCH: ex.epoch,
                attributes.RECONCILED: run.reconciled,
            }
        )
    return run


def _tool_attributes(ctx: ToolContext) -> attributes.Attributes:
    ex = ctx.execution
    return {
        attributes.TOOL: ex.tool_name,
        attributes.CHANNEL: ex.channel_id,
        attributes.KEY_NAME: ex.key_name,
        attributes.OPERATION_ID: ex.id,
        attributes.IDEMPOTENCY_KEY: ex.idempotency_key,
        attributes.EPOCH: ex.epoch,
    }


def traced_async(fn: AsyncToolFn) -> AsyncToolFn:
    """``fn`` in an ``oncelog.tool`` span (tracing on), else ``fn`` itself."""
    if not active():
        return fn

    async def call(ctx: ToolContext) -> Any:
        with tracer().start_as_current_span("oncelog.tool", attributes=_tool_attributes(ctx)):
            return await fn(ctx)

    return call


def traced_sync(fn: SyncToolFn) -> SyncToolFn:
    """The blocking :func:`traced_async`."""
    if not active():
        return fn

    def call(ctx: ToolContext) -> Any:
        with tracer().start_as_current_span("oncelog.tool", attributes=_tool_attributes(ctx)):
            return fn(ctx)

    return call
