"""The tool executor: claim -> (reconcile) -> call -> complete or fail, under a heartbeat.

    run = await client.run_tool("run-42", "charge:4471", tool_name="charge",
                                params={"order_id": "4471"}, fn=charge)
    run.result, run.execution.epoch

What happens, in order (the plan is :mod:`oncelog.producer.tool_plan`; this module
drives it twice: with asyncio, and blocking with a heartbeat thread):

- ``replayed``: the recorded result comes back; ``fn`` is not called.
- ``in_progress``: :class:`~oncelog.errors.ToolInProgressError` (code ``in_progress``), or with
  ``on_in_progress="wait"`` the executor waits for the holder's lease deadline (log time, read
  as the transport's clock) and claims again, bounded by ``wait_timeout_s`` (then
  :class:`~oncelog.errors.LedgerTimeoutError`).
- ``awaiting_approval`` (the tool's ``approval`` rule selected these params):
  :class:`~oncelog.errors.ApprovalPendingError` (code ``approval_pending``) at once, or with
  ``RequireApproval(on_pending="wait")`` a claim every ``poll_s`` until the decision, bounded
  by its ``wait_timeout_s``; a deny is :class:`~oncelog.errors.ApprovalDeniedError`
  (:mod:`oncelog.producer.approval_rule`).
- ``claimed``/``reclaimed``: on ``reclaimed`` ``reconcile(previous, ctx)`` runs first; a non-None
  answer is completed as the result ("downstream already applied this idempotency key") with
  ``reconciled="found"``. Otherwise ``fn(ctx)`` runs, and its completion (or failure) says
  ``reconciled="not_found"``; without a hook it says nothing, and the audit lists a previous
  attempt whose outcome was unknown as a possible duplicate. Both run under a heartbeat every
  ``lease_seconds / 3``.
- A lost lease (a fenced heartbeat, or a heartbeat that failed outright after the deadline) or a
  requested cancel stops the call (the async task is cancelled; a sync tool sees ``ctx.stopped``)
  and raises :class:`~oncelog.errors.LeaseLostError`, or its subclass
  :class:`~oncelog.errors.ExecutionCancelledError` for a cancel. A cancelled execution is recorded
  as a non-retryable failure ``cancelled: <reason>``: a reclaim clears the cancel flag, so a
  release (or a retryable failure) would let the next automatic retry silently undo the cancel.
- A result that the tool did return is always offered to the ledger, even after a stop: the
  effect happened, and a fenced completion is what records ``duplicate_effect_suspected``.
- A result that cannot be recorded (params and results are canonical JSON of at most 1 MiB
  each; a ``datetime``, a ``Decimal`` or 2 MB are not) is recorded as a failure for good with
  code ``result_unrecordable``, its reason and a digest, and raised as
  :class:`~oncelog.errors.ResultUnrecordableError`: the tool ran, and a retry answers that
  failure instead of running it again. ``result_encoder=oncelog.jsonable`` (pydantic's JSON
  mode) records datetimes, decimals, UUIDs and models as JSON.
- An ``external`` tool with neither ``reconcile`` nor ``downstream_dedupes=True`` is warned of
  (:class:`~oncelog.producer.tool_model.UnguardedToolWarning`) by ``run_tool`` and the decorators.
- An ``Exception`` from the tool is recorded with ``fail_execution`` and re-raised. It is
  retryable when it has a bool ``retryable`` attribute set to True, or else when it is an
  instance of ``retry_on`` (by default timeouts, connection errors, and the transport errors
  of httpx, requests and aiohttp: :mod:`oncelog.producer.transient`).
- A ``BaseException`` that is not an ``Exception`` (``KeyboardInterrupt``, ``SystemExit``, the
  caller cancelling ``run_tool``, a tool's own ``CancelledError``) records nothing: the lease
  lapses and the next claimer reconciles with the attempt.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, Unpack

from oncelog.producer import tool_plan, tool_spans
from oncelog.producer.recordable import UnrecordableAnswerError
from oncelog.producer.results import Claim, Execution, Heartbeat
from oncelog.producer.tool_model import (
    DEFAULT_RETRY_ON,
    DEFAULT_WAIT_TIMEOUT_S,
    AsyncReconcile,
    AsyncToolFn,
    BoundTool,
    InProgressPolicy,
    Reconciled,
    SyncReconcile,
    SyncToolFn,
    ToolContext,
    ToolJob,
    ToolOptions,
    ToolOutcome,
    ToolRun,
    ToolSpec,
)
from oncelog.producer.tool_plan import LedgerCalls, Plan, PlanRunner, Step

__all__ = [
    "DEFAULT_RETRY_ON",
    "DEFAULT_WAIT_TIMEOUT_S",
    "AsyncLedgerCalls",
    "InProgressPolicy",
    "LedgerTool",
    "SyncLedgerCalls",
    "SyncLedgerTool",
    "ToolContext",
    "ToolRun",
    "ToolSpec",
    "ledger_tool",
    "run_spec",
    "run_spec_sync",
    "sync_ledger_tool",
]

R = TypeVar("R")
SyncLedgerCalls = LedgerCalls[Claim, Execution, Heartbeat]
AsyncLedgerCalls = LedgerCalls[Awaitable[Claim], Awaitable[Execution], Awaitable[Heartbeat]]


async def run_spec(client: AsyncLedgerCalls, job: ToolJob[AsyncToolFn, AsyncReconcile]) -> ToolRun:
    """Run ``job.fn`` at most once per idempotency key through the ledger (see the module doc)."""
    fn, reconcile = tool_spans.traced_async(job.fn), job.reconcile

    async def work(ctx: ToolContext) -> tuple[Any, Reconciled]:
        hook, previous = reconcile, ctx.previous
        with _found_if_unrecordable():
            known = None if hook is None or previous is None else await hook(previous, ctx)
        return (known, "found") if known is not None else (await fn(ctx), _ran(hook, previous))

    plan = tool_plan.plan_run(job.spec, job.target, job.params, client.clock)
    with tool_spans.run_span(job) as span:
        return tool_spans.ran(span, await _drive_async(plan, client, work))


async def _drive_async(
    plan: Plan[R], client: AsyncLedgerCalls, work: Callable[[ToolContext], Awaitable[Any]]
) -> R:
    runner = PlanRunner(plan)
    while (step := runner.next_step()) is not None:
        try:
            runner.answer(await _perform_async(step, client, work))
        except Exception as exc:  # the plan judges the call's error (and re-raises the rest)
            runner.fail(exc)
    return runner.result


async def _perform_async(
    step: Step, client: AsyncLedgerCalls, work: Callable[[ToolContext], Awaitable[Any]]
) -> Any:
    if isinstance(step, tool_plan.WaitStep):
        # A wait beside the tool runs out: the tool's end cancels the heartbeat task instead.
        await (client.clock.timer if step.beside_tool else client.clock.apause)(step.seconds)
        return False
    if isinstance(step, tool_plan.RunToolStep):
        return await _guarded_async(step, client, work)
    return await step.invoke(client)


async def _guarded_async(
    step: tool_plan.RunToolStep,
    client: AsyncLedgerCalls,
    work: Callable[[ToolContext], Awaitable[Any]],
) -> ToolOutcome:
    task = asyncio.ensure_future(work(step.ctx))
    beat = asyncio.create_task(_drive_async(step.heartbeats(), client, work))
    try:
        await asyncio.wait({task, beat}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        # Reached with the work unfinished only on a stop or when our caller cancels us.
        beat.cancel()
        task.cancel()
        await asyncio.gather(task, beat, return_exceptions=True)
    if task.cancelled():
        return ToolOutcome(error=asyncio.CancelledError())
    error = task.exception()
    if error is not None:
        return ToolOutcome(error=error)
    result, reconciled = task.result()
    return ToolOutcome(result, reconciled_as=reconciled)


class LedgerTool(
    BoundTool[
        AsyncLedgerCalls,
        Callable[..., Awaitable[Any]],
        AsyncReconcile,
        Awaitable[ToolRun],
        Awaitable[Any],
    ]
):
    """An async tool bound to a ledger: ``await tool("run-1", "charge:1", **params)``
    (``await tool.run(...)``: the whole :class:`ToolRun`).

    Made by :func:`ledger_tool`; see :class:`~oncelog.producer.tool_model.BoundTool`.
    """

    def _run(self, job: ToolJob[Any, AsyncReconcile]) -> Awaitable[ToolRun]:
        return run_spec(self.client(), job)

    async def _result(self, run: Awaitable[ToolRun]) -> Any:
        return (await run).result


def ledger_tool(
    client: AsyncLedgerCalls | Callable[[], AsyncLedgerCalls],
    *,
    tool_name: str | None = None,
    reconcile: AsyncReconcile | None = None,
    **options: Unpack[ToolOptions],
) -> Callable[[Callable[..., Awaitable[Any]]], LedgerTool]:
    """Decorate ``async def tool(ctx, **params)`` to run through the ledger.

        @ledger_tool(client, effect="external", dedup_fields=["order_id"])
        async def charge(ctx: ToolContext, order_id: str, amount_cents: int) -> dict:
            ...

        await charge("run-42", "charge:4471", order_id="4471", amount_cents=4200)

    ``client`` is a :class:`~oncelog.LedgerClient`, or a function returning one (called at
    each run, so the tool can be defined before the client is opened). ``tool_name``
    defaults to the function's name; ``reconcile(previous, ctx)`` is the hook a reclaim
    asks first (see the module). ``**options`` are any of
    :class:`~oncelog.producer.tool_model.ToolOptions`: ``dedup_fields``,
    ``lease_seconds``, ``retention_seconds``, ``effect``, ``on_in_progress``,
    ``wait_timeout_s``, ``retry_on``, ``result_encoder``, ``downstream_dedupes``,
    ``approval``. The decorated tool is a :class:`LedgerTool`:
    ``await tool(channel_id, key_name, **params)`` returns the result,
    ``await tool.run(...)`` the whole :class:`~oncelog.producer.tool_model.ToolRun`.
    """

    def wrap(fn: Callable[..., Awaitable[Any]]) -> LedgerTool:
        spec = ToolSpec(tool_name or fn.__name__, **options)
        spec.warn_if_unguarded(reconcile, stacklevel=2)
        return LedgerTool(fn, client, spec, reconcile)

    return wrap


# --- the blocking driver -----------------------------------------------------------------
#
# The same plan with the heartbeat in a thread. A thread cannot be interrupted, so a sync
# tool stops cooperatively: it checks ``ctx.stopped``, sleeps with ``ctx.wait(...)`` or
# calls ``ctx.raise_if_stopped()``. Only an ``Exception`` from the tool is recorded as a
# failure; a ``KeyboardInterrupt`` (any other ``BaseException``) propagates with nothing
# recorded, and the lease lapses.

Work = Callable[[ToolContext], tuple[Any, Reconciled]]


def run_spec_sync(client: SyncLedgerCalls, job: ToolJob[SyncToolFn, SyncReconcile]) -> ToolRun:
    """Blocking :func:`~oncelog.producer.executor.run_spec` for a sync ``job.fn``."""
    fn, reconcile = tool_spans.traced_sync(job.fn), job.reconcile

    def work(ctx: ToolContext) -> tuple[Any, Reconciled]:
        hook, previous = reconcile, ctx.previous
        with _found_if_unrecordable():
            known = None if hook is None or previous is None else hook(previous, ctx)
        return (known, "found") if known is not None else (fn(ctx), _ran(hook, previous))

    plan = tool_plan.plan_run(job.spec, job.target, job.params, client.clock)
    with tool_spans.run_span(job) as span:
        return tool_spans.ran(span, _drive_sync(plan, _Performer(client, work, threading.Event())))


@contextmanager
def _found_if_unrecordable() -> Iterator[None]:
    """A reconcile hook's answer that has no JSON form is still an effect it found."""
    try:
        yield
    except UnrecordableAnswerError as exc:
        exc.reconciled_as = "found"
        raise


def _ran(hook: object, previous: object) -> Reconciled:
    """How the tool's own run settles a previous attempt: ``not_found`` when a reconcile
    hook was asked (and answered None), nothing when none was."""
    return None if hook is None or previous is None else "not_found"


def _drive_sync(plan: Plan[R], perform: Callable[[Step], Any]) -> R:
    runner = PlanRunner(plan)
    while (step := runner.next_step()) is not None:
        try:
            runner.answer(perform(step))
        except Exception as exc:  # the plan judges the call's error (and re-raises the rest)
            runner.fail(exc)
    return runner.result


class _Performer:
    """Performs steps, blocking; ``finished`` ends the heartbeat of the current tool run."""

    def __init__(self, client: SyncLedgerCalls, work: Work, finished: threading.Event) -> None:
        self._client, self._work, self._finished = client, work, finished

    def __call__(self, step: Step) -> Any:
        if isinstance(step, tool_plan.WaitStep):
            if step.beside_tool:
                return self._client.clock.wait(self._finished, step.seconds)
            self._client.clock.pause(step.seconds)
            return False
        if isinstance(step, tool_plan.RunToolStep):
            return self._guarded(step)
        return step.invoke(self._client)

    def _guarded(self, step: tool_plan.RunToolStep) -> ToolOutcome:
        finished = threading.Event()
        beat = threading.Thread(
            # In the caller's context: the heartbeats' spans are children of its run's span.
            target=contextvars.copy_context().run,
            args=(_drive_sync, step.heartbeats(), _Performer(self._client, self._work, finished)),
            name=f"oncelog-heartbeat-{step.ctx.execution.id[:8]}",
            daemon=True,
        )
        beat.start()
        try:
            result, reconciled = self._work(step.ctx)
        except Exception as exc:  # recorded as a failure by the plan; BaseException is not
            return ToolOutcome(error=exc)
        finally:
            finished.set()
            # Joined so that no heartbeat outlives the run (it would reopen a closed client).
            beat.join()
        return ToolOutcome(result, reconciled_as=reconciled)


class SyncLedgerTool(BoundTool[SyncLedgerCalls, Callable[..., Any], SyncReconcile, ToolRun, Any]):
    """The blocking :class:`~oncelog.producer.executor.LedgerTool`."""

    def _run(self, job: ToolJob[Any, SyncReconcile]) -> ToolRun:
        return run_spec_sync(self.client(), job)

    def _result(self, run: ToolRun) -> Any:
        return run.result


def sync_ledger_tool(
    client: SyncLedgerCalls | Callable[[], SyncLedgerCalls],
    *,
    tool_name: str | None = None,
    reconcile: SyncReconcile | None = None,
    **options: Unpack[ToolOptions],
) -> Callable[[Callable[..., Any]], SyncLedgerTool]:
    """Decorate a blocking ``def tool(ctx, **params)``; see :func:`ledger_tool`."""

    def wrap(fn: Callable[..., Any]) -> SyncLedgerTool:
        spec = ToolSpec(tool_name or fn.__name__, **options)
        spec.warn_if_unguarded(reconcile, stacklevel=2)
        return SyncLedgerTool(fn, client, spec, reconcile)

    return wrap
