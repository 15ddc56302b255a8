"""The tool executor end to end: claim, heartbeat, cancel, reconcile, complete or fail.

Each scenario runs through the async driver (``LedgerClient.run_tool``, async tool) and the
blocking one (``SyncLedgerClient.run_tool``, blocking tool with a heartbeat thread), as a
contract on both ledgers (``ledger_backend``): on Kafka time passes for real, in memory the
manual clock moves one heartbeat interval at a time (see ``Backend.work``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from oncelog.errors import (
    ExecutionCancelledError,
    ExecutionFailedError,
    InProgressError,
    LeaseLostError,
    LedgerTimeoutError,
    ToolInProgressError,
)
from oncelog.identity.tokens import token_fingerprint
from oncelog.producer.executor import ToolContext, ToolRun, ledger_tool, sync_ledger_tool
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.schemas.models import PreviousAttempt
from tests.integration.contract import Backend

CHANNEL = "run-7"
KEY = "charge:order-9"
ORDER = {"order_id": "9", "amount_cents": 1200}


class DeclinedError(Exception):
    """A tool error that must not be retried."""


class FlakyError(Exception):
    """A tool error that says it may be retried."""

    retryable = True


@dataclass
class FakeTool:
    """A tool doing ``duration_s`` of work (in the ledger's time), the same sync and async.

    ``during`` runs at the start of the call (another worker acting meanwhile);
    ``answer`` is what the reconcile hook returns.
    """

    backend: Backend
    result: Any = "ok"
    duration_s: float = 0.0
    error: Exception | None = None
    during: Callable[[ToolContext], None] | None = None
    answer: Any = None
    calls: list[ToolContext] = field(default_factory=list)
    reconciled_with: list[PreviousAttempt] = field(default_factory=list)
    stopped_at: float | None = None

    def sync_fn(self, ctx: ToolContext) -> Any:
        start = self._begin(ctx)
        if self.during is not None:
            self.during(ctx)
        if self.backend.work(ctx, max(0.0, self.duration_s - (self.backend.now_s() - start))):
            self.stopped_at = self.backend.now_s()
            ctx.raise_if_stopped()
        return self._end()

    async def async_fn(self, ctx: ToolContext) -> Any:
        start = self._begin(ctx)
        if self.during is not None:
            await asyncio.to_thread(self.during, ctx)
        left = max(0.0, self.duration_s - (self.backend.now_s() - start))
        try:
            # In a thread, so the loop stays free for the heartbeat; a stop cancels this await.
            await asyncio.to_thread(self.backend.work, ctx, left)
        except asyncio.CancelledError:
            self.stopped_at = self.backend.now_s()
            raise
        return self._end()

    def sync_reconcile(self, previous: PreviousAttempt, ctx: ToolContext) -> Any:
        self.reconciled_with.append(previous)
        return self.answer

    async def async_reconcile(self, previous: PreviousAttempt, ctx: ToolContext) -> Any:
        return self.sync_reconcile(previous, ctx)

    def _begin(self, ctx: ToolContext) -> float:
        self.calls.append(ctx)
        return self.backend.now_s()

    def _end(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


@dataclass
class Runner:
    """Runs a :class:`FakeTool` through one executor driver, blocking."""

    kind: str
    worker_id: str
    backend: Backend
    run_with: Callable[..., ToolRun]

    def tool(self, **kw: Any) -> FakeTool:
        return FakeTool(self.backend, **kw)

    def run(self, tool: FakeTool, key: str = KEY, **options: Any) -> ToolRun:
        args: dict[str, Any] = {"tool_name": "charge", "params": ORDER} | options
        return self.run_with(tool, key, args)


@pytest.fixture(params=["async", "sync"])
def runner(request: pytest.FixtureRequest, ledger_backend: Backend) -> Runner:
    """The executor under test, as worker ``worker-a``."""
    if request.param == "sync":
        sync = ledger_backend.sync_client("worker-a")

        def run_sync(tool: FakeTool, key: str, args: dict[str, Any]) -> ToolRun:
            return sync.run_tool(
                CHANNEL, key, fn=tool.sync_fn, reconcile=tool.sync_reconcile, **args
            )

        return Runner("sync", sync.worker_id, ledger_backend, run_sync)
    client = ledger_backend.async_client("worker-a")
    loop = asyncio.new_event_loop()
    ledger_backend.loops.append(loop)

    def run_async(tool: FakeTool, key: str, args: dict[str, Any]) -> ToolRun:
        call = client.run_tool(
            CHANNEL, key, fn=tool.async_fn, reconcile=tool.async_reconcile, **args
        )
        return loop.run_until_complete(call)

    return Runner("async", client.worker_id, ledger_backend, run_async)


MakeClient = Callable[..., SyncLedgerClient]


def _claim(client: SyncLedgerClient, key: str = KEY, **kw: Any) -> Any:
    return client.claim_execution(CHANNEL, key, tool_name="charge", params=ORDER, **kw)


def test_heartbeats_keep_a_short_lease_alive_through_a_long_call(
    runner: Runner, make_worker: MakeClient
) -> None:
    other = make_worker("worker-b")
    contenders: list[Any] = []

    def contend(ctx: ToolContext) -> None:
        # Past the first deadline, only the heartbeats can still hold the lease.
        past_deadline = ctx.execution.lease_deadline_ms / 1000 + 1 - runner.backend.now_s()
        assert not runner.backend.work(ctx, past_deadline)
        contenders.append(_claim(other))

    tool = runner.tool(result={"charge": "ch_1"}, duration_s=6.0, during=contend)
    run = runner.run(tool, lease_seconds=2)
    assert [c.status for c in contenders] == ["in_progress"]
    assert contenders[0].holder == "worker-a"
    assert run.status == "claimed"
    assert run.execution.epoch == 1
    assert run.execution.status == "completed"
    assert run.result == {"charge": "ch_1"}
    outcomes = runner.backend.outcomes(CHANNEL, run.execution.id)
    # Every lease/3 over 6 s: about nine heartbeats; a few are enough to prove the point.
    assert outcomes.count("heartbeat_ok") >= 5
    assert outcomes[0] == "claimed"
    assert outcomes[-1] == "completed"


def test_a_cancel_stops_the_call_within_a_heartbeat(
    runner: Runner, make_worker: MakeClient
) -> None:
    other = make_worker("operator")
    lease = 3.0
    cancelled_at: list[float] = []

    def cancel(ctx: ToolContext) -> None:
        assert other.cancel_execution(ctx.execution, "user abort") == "cancel_requested"
        cancelled_at.append(runner.backend.now_s())

    tool = runner.tool(duration_s=10 * lease, during=cancel)
    with pytest.raises(ExecutionCancelledError) as info:
        runner.run(tool, lease_seconds=lease)
    assert isinstance(info.value, LeaseLostError)
    assert info.value.code == "cancelled"
    assert info.value.reason == "user abort"
    assert tool.stopped_at is not None
    # One heartbeat interval (of log time), plus the round trip of that heartbeat's decision,
    # which the client bounds by re-sending it after resend_after_s; well short of the
    # tool's own 10 leases.
    assert tool.stopped_at - cancelled_at[0] < lease / 3 + runner.backend.timeouts.resend_after_s
    # The cancel is durable: a later attempt does not silently run the tool again.
    with pytest.raises(ExecutionFailedError, match="cancelled: user abort"):
        runner.run(runner.tool(), lease_seconds=lease)


def test_reconcile_hook_sees_the_crashed_attempt_on_reclaim(
    runner: Runner, make_worker: MakeClient
) -> None:
    crashed = make_worker("worker-crashed")
    first = _claim(crashed, lease_seconds=1)
    assert first.status == "claimed"
    runner.backend.pass_log_time(first.execution.lease_deadline_ms)  # the worker just stopped
    tool = runner.tool(result="charged")
    run = runner.run(tool, lease_seconds=10)
    assert [(p.epoch, p.worker_id) for p in tool.reconciled_with] == [(1, "worker-crashed")]
    assert tool.reconciled_with[0].token_fp == token_fingerprint(first.claim_token)
    assert len(tool.calls) == 1
    assert tool.calls[0].epoch == 2
    assert tool.calls[0].previous == tool.reconciled_with[0]
    assert tool.calls[0].idempotency_key == first.execution.idempotency_key
    assert run.status == "reclaimed"
    assert run.execution.epoch == 2
    assert run.reconciled is False
    assert run.reconciled_as == "not_found"  # the hook said so, and the tool ran
    assert run.result == "charged"


def test_reconcile_answer_completes_without_calling_the_tool(
    runner: Runner, make_worker: MakeClient
) -> None:
    crashed = make_worker("worker-crashed")
    first = _claim(crashed, lease_seconds=1)
    runner.backend.pass_log_time(first.execution.lease_deadline_ms)
    tool = runner.tool(answer={"charge": "ch_found_downstream"})
    run = runner.run(tool, lease_seconds=10)
    assert tool.calls == []
    assert run.reconciled is True
    assert run.reconciled_as == "found"
    assert run.execution.status == "completed"
    assert run.result == {"charge": "ch_found_downstream"}
    assert runner.run(runner.tool()).status == "replayed"


def test_replayed_returns_the_recorded_result_without_calling_the_tool(runner: Runner) -> None:
    first = runner.run(runner.tool(result={"n": 1}))
    tool = runner.tool(result={"n": 2})
    again = runner.run(tool)
    assert tool.calls == []
    assert again.status == "replayed"
    assert again.result == {"n": 1}
    assert again.execution.epoch == first.execution.epoch == 1


def test_a_raising_tool_records_a_failure_and_reraises(
    runner: Runner, make_worker: MakeClient
) -> None:
    with pytest.raises(DeclinedError, match="card declined"):
        runner.run(runner.tool(error=DeclinedError("card declined")))
    with pytest.raises(ExecutionFailedError, match="DeclinedError: card declined"):
        _claim(make_worker("worker-b"))


def test_a_retryable_failure_is_taken_over_at_once_with_the_error(runner: Runner) -> None:
    with pytest.raises(FlakyError):
        runner.run(runner.tool(error=FlakyError("gateway 503")))
    tool = runner.tool(result="second time lucky")
    run = runner.run(tool)
    assert run.status == "reclaimed"
    assert run.execution.epoch == 2
    [previous] = tool.reconciled_with
    assert previous.status.value == "FAILED"
    assert previous.error == "FlakyError: gateway 503"


def test_in_progress_raises_a_typed_error_by_default(
    runner: Runner, make_worker: MakeClient
) -> None:
    held = _claim(make_worker("worker-b"), lease_seconds=30)
    tool = runner.tool()
    with pytest.raises(ToolInProgressError) as info:
        runner.run(tool)
    assert isinstance(info.value, InProgressError)
    assert info.value.code == "in_progress"
    assert info.value.holder == "worker-b"
    assert info.value.lease_deadline_ms == held.execution.lease_deadline_ms
    assert tool.calls == []


def test_in_progress_waits_for_the_lease_to_lapse_with_the_option(
    runner: Runner, make_worker: MakeClient
) -> None:
    held = _claim(make_worker("worker-b"), lease_seconds=1)
    tool = runner.tool(result="after the wait")
    run = runner.run(tool, on_in_progress="wait", wait_timeout_s=20)
    assert run.status == "reclaimed"
    assert run.execution.epoch == 2
    assert [p.worker_id for p in tool.reconciled_with] == ["worker-b"]
    assert run.execution.completed_at_ms is not None
    assert run.execution.completed_at_ms >= held.execution.lease_deadline_ms


def test_in_progress_wait_is_bounded(runner: Runner, make_worker: MakeClient) -> None:
    wait_s, calls_s = 1.0, runner.backend.timeouts.total_s
    _claim(make_worker("worker-b"), lease_seconds=wait_s + calls_s + 30)  # outlives the bound
    tool = runner.tool()
    started = time.monotonic()
    with pytest.raises(LedgerTimeoutError, match="still held by worker-b"):
        runner.run(tool, on_in_progress="wait", wait_timeout_s=wait_s)
    # The wait, plus the one claim in flight when it ends (bounded by the call timeout).
    assert time.monotonic() - started < wait_s + calls_s
    assert tool.calls == []


def _stall_until_reclaimed(ctx: ToolContext, other: SyncLedgerClient, backend: Backend) -> None:
    """Block the event loop (a misbehaving tool), so no heartbeat runs, until a reclaim."""
    backend.pass_log_time(ctx.execution.lease_deadline_ms)
    assert _claim(other, lease_seconds=30).status == "reclaimed"


async def test_a_lost_lease_stops_the_call(
    ledger_backend: Backend, make_worker: MakeClient
) -> None:
    other = make_worker("worker-b")
    stopped: list[ToolContext] = []

    async def stalls_then_works(ctx: ToolContext) -> str:
        _stall_until_reclaimed(ctx, other, ledger_backend)
        try:
            # The next heartbeat is fenced and cancels this.
            await asyncio.to_thread(ledger_backend.work, ctx, 60)
        except asyncio.CancelledError:
            stopped.append(ctx)
            raise
        return "never"

    client = ledger_backend.async_client()
    with pytest.raises(LeaseLostError, match="lease lost while the tool ran") as info:
        await client.run_tool(
            CHANNEL, KEY, tool_name="charge", params=ORDER, fn=stalls_then_works, lease_seconds=1
        )
    assert not isinstance(info.value, ExecutionCancelledError)
    assert info.value.code == "lease_lost"
    assert [c.stopped for c in stopped] == [True]


async def test_a_result_after_a_lost_lease_is_fenced_and_flagged(
    ledger_backend: Backend, make_worker: MakeClient
) -> None:
    other = make_worker("worker-b")

    async def stalls_then_returns(ctx: ToolContext) -> str:
        _stall_until_reclaimed(ctx, other, ledger_backend)
        return "charged twice?"

    client = ledger_backend.async_client()
    with pytest.raises(LeaseLostError, match="duplicate_effect_suspected"):
        await client.run_tool(
            CHANNEL, KEY, tool_name="charge", params=ORDER, fn=stalls_then_returns,
            lease_seconds=1,
        )  # fmt: skip
    flagged = [d for d in ledger_backend.decisions(CHANNEL) if d.duplicate_effect_suspected]
    assert [d.outcome.value for d in flagged] == ["stale_claim"]


async def test_async_decorator_runs_once_and_replays(ledger_backend: Backend) -> None:
    calls: list[tuple[int, str]] = []
    client = ledger_backend.async_client()

    @ledger_tool(lambda: client, lease_seconds=5, dedup_fields=["order_id"])
    async def charge(ctx: ToolContext, *, order_id: str, trace: str) -> dict[str, Any]:
        calls.append((ctx.epoch, ctx.idempotency_key))
        return {"charged": order_id}

    assert charge.__name__ == "charge"
    assert await charge(CHANNEL, "charge:1", order_id="1", trace="t-1") == {"charged": "1"}
    # A volatile field (outside dedup_fields) replays instead of running again.
    again = await charge.run(CHANNEL, "charge:1", order_id="1", trace="t-2")
    assert again.status == "replayed"
    assert again.result == {"charged": "1"}
    assert [epoch for epoch, _ in calls] == [1]
    assert calls[0][1] == again.execution.idempotency_key
    assert again.execution.tool_name == "charge"


def test_sync_decorator_runs_once_and_replays(ledger_backend: Backend) -> None:
    calls: list[int] = []
    client = ledger_backend.sync_client()

    @sync_ledger_tool(client, tool_name="send_email", effect="external")
    def send(ctx: ToolContext, *, to: str) -> str:
        calls.append(ctx.epoch)
        return f"sent to {to}"

    assert send(CHANNEL, step=3, to="a@example.com") == "sent to a@example.com"
    again = send.run(CHANNEL, step=3, to="a@example.com")
    assert again.status == "replayed"
    assert again.execution.key_name == "step-3"
    assert calls == [1]
