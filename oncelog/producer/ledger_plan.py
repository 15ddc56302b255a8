"""Operations of several ledger requests, written once as plans; two drivers run them.

A plan is a generator of steps that does no I/O (as :mod:`oncelog.producer.tool_plan`'s,
and psycopg's ``generators``): it yields a step, and the driver sends the step's answer
back in, or throws the step's exception in. :func:`drive` performs the steps blocking,
:func:`adrive` awaiting; a fork, an adoption, a branch lookup and an adapter's tool call
are each one plan that both clients run (:class:`~oncelog.producer.client.ClientPlan`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, Unpack

from oncelog.producer.clock import Clock
from oncelog.producer.executor import AsyncLedgerCalls, SyncLedgerCalls, run_spec, run_spec_sync
from oncelog.producer.tool_model import (
    AsyncReconcile,
    AsyncToolFn,
    SyncReconcile,
    SyncToolFn,
    ToolContext,
    ToolJob,
    ToolOptions,
    ToolRun,
    ToolSpec,
    ToolTarget,
)
from oncelog.producer.tool_plan import PlanRunner
from oncelog.producer.transport import Transport
from oncelog.schemas.models import Request

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Send:
    """Send ``request``; answered with its decision."""

    request: Request = field(repr=False)  # may carry a claim token


@dataclass(frozen=True, slots=True)
class ReadChannel:
    """Read what the projector published of ``channel_id``; answered with the snapshots."""

    channel_id: str


@dataclass(frozen=True, slots=True)
class RunTool:
    """Run ``job`` through the executor; answered with its ``ToolRun``. The job's functions
    are of the driver's kind (async for :func:`adrive`, blocking for :func:`drive`)."""

    job: ToolJob[Any, Any]


@dataclass(frozen=True, slots=True)
class Record:
    """Run a pure operation whose ``result`` is known already (a mark); answered with its
    ``ToolRun``."""

    spec: ToolSpec
    target: ToolTarget
    params: Mapping[str, Any]
    result: Any

    def job(self, fn: Callable[[ToolContext], Any]) -> ToolJob[Any, Any]:
        """The executor's job, with ``fn`` (of the driver's kind) answering ``result``."""
        return ToolJob(self.spec, self.target, self.params, fn)


@dataclass(frozen=True, slots=True)
class Pause:
    """Let ``seconds`` pass on the client's clock."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Blocking:
    """A blocking read of the caller's (on a worker thread when awaited); answered with it."""

    read: Callable[[], Any]


@dataclass(frozen=True, slots=True)
class Exclusive:
    """Run ``plan`` holding ``lock``; answered with what the plan returns."""

    lock: PlanLock
    plan: LedgerPlan[Any]


LedgerStep = Send | ReadChannel | RunTool | Record | Pause | Blocking | Exclusive
LedgerPlan = Generator[LedgerStep, Any, T]


class PlanLock:
    """One lock for both drivers: a thread lock when blocking, an asyncio lock when awaited."""

    def __init__(self) -> None:
        self.blocking = threading.Lock()
        self._awaiting: asyncio.Lock | None = None

    @property
    def awaiting(self) -> asyncio.Lock:
        """The asyncio lock (made on first use, inside the running loop)."""
        if self._awaiting is None:
            self._awaiting = asyncio.Lock()
        return self._awaiting


class PlanClient(Protocol):
    """What a driver needs of a client: its transport (opened on demand) and its clock."""

    @property
    def clock(self) -> Clock:
        """The clock leases are judged by."""
        ...

    @property
    def transport(self) -> Transport:
        """The open transport (blocking: opens it on first use)."""
        ...

    def opened(self) -> Awaitable[Transport]:
        """The open transport, opened on a worker thread on first use."""
        ...


class SyncPlanClient(PlanClient, SyncLedgerCalls, Protocol):
    """A blocking client (``SyncLedgerClient``)."""


class AsyncPlanClient(PlanClient, AsyncLedgerCalls, Protocol):
    """An async client (``LedgerClient``)."""


def run_tool(
    channel_id: str,
    key_name: str | None = None,
    *,
    step: int | None = None,
    fn: SyncToolFn | AsyncToolFn,
    reconcile: SyncReconcile | AsyncReconcile | None = None,
    tool_name: str,
    params: Mapping[str, Any],
    **options: Unpack[ToolOptions],
) -> LedgerPlan[ToolRun]:
    """Claim, run ``fn`` under a heartbeat, then complete or fail: see
    :mod:`oncelog.producer.executor`. ``**options`` are any of
    :class:`~oncelog.producer.tool_model.ToolOptions`: ``dedup_fields``, ``lease_seconds``,
    ``retention_seconds``, ``effect``, ``on_in_progress``, ``wait_timeout_s``, ``retry_on``,
    ``result_encoder``, ``downstream_dedupes``, ``approval``. ``fn`` and ``reconcile`` are
    async on a ``LedgerClient``, blocking on a ``SyncLedgerClient`` (which beats in a thread). An
    external tool with neither ``reconcile`` nor ``downstream_dedupes`` is warned of
    (:class:`UnguardedToolWarning`) at the caller's line."""
    job = ToolJob(
        ToolSpec(tool_name, **options),
        ToolTarget(channel_id, key_name, step),
        params,
        fn,
        reconcile,
    )
    # Called by the client's method (ClientPlan), itself called by the caller's line.
    job.spec.warn_if_unguarded(reconcile, stacklevel=3)
    return _run_tool(job)


def _run_tool(job: ToolJob[Any, Any]) -> LedgerPlan[ToolRun]:
    run: ToolRun = yield RunTool(job)
    return run


def drive(plan: LedgerPlan[T], client: SyncPlanClient) -> T:
    """Run ``plan``, blocking."""
    runner = PlanRunner(plan)
    while (step := runner.next_step()) is not None:
        try:
            runner.answer(_perform(step, client))
        except BaseException as exc:  # the plan sees it where it yielded (its `with`s too)
            runner.fail(exc)
    return runner.result


async def adrive(plan: LedgerPlan[T], client: AsyncPlanClient) -> T:
    """Run ``plan``, awaiting; blocking reads go to a worker thread."""
    runner = PlanRunner(plan)
    while (step := runner.next_step()) is not None:
        try:
            runner.answer(await _aperform(step, client))
        except BaseException as exc:  # as in drive
            runner.fail(exc)
    return runner.result


def _perform(step: LedgerStep, client: SyncPlanClient) -> Any:
    if isinstance(step, Send):
        return client.transport.call(step.request)
    if isinstance(step, ReadChannel):
        return client.transport.channel_snapshots(step.channel_id)
    if isinstance(step, RunTool):
        return run_spec_sync(client, step.job)
    if isinstance(step, Record):
        return run_spec_sync(client, step.job(lambda _: step.result))
    if isinstance(step, Pause):
        return client.clock.pause(step.seconds)
    if isinstance(step, Blocking):
        return step.read()
    with step.lock.blocking:
        return drive(step.plan, client)


async def _aperform(step: LedgerStep, client: AsyncPlanClient) -> Any:
    if isinstance(step, Send):
        return await (await client.opened()).acall(step.request)
    if isinstance(step, ReadChannel):
        transport = await client.opened()
        return await asyncio.to_thread(transport.channel_snapshots, step.channel_id)
    if isinstance(step, RunTool):
        return await run_spec(client, step.job)
    if isinstance(step, Record):
        return await run_spec(client, step.job(_known(step.result)))
    if isinstance(step, Pause):
        return await client.clock.apause(step.seconds)
    if isinstance(step, Blocking):
        return await asyncio.to_thread(step.read)
    async with step.lock.awaiting:
        return await adrive(step.plan, client)


def _known(result: Any) -> Callable[[ToolContext], Awaitable[Any]]:
    async def answer(_: ToolContext) -> Any:
        return result

    return answer


__all__ = [
    "AsyncPlanClient",
    "Blocking",
    "Exclusive",
    "LedgerPlan",
    "LedgerStep",
    "Pause",
    "PlanLock",
    "ReadChannel",
    "Record",
    "RunTool",
    "Send",
    "SyncPlanClient",
    "adrive",
    "drive",
    "run_tool",
]
