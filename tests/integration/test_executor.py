"""The tool executor end to end: claim, heartbeat, cancel, reconcile, complete or fail.

Each scenario runs through the async executor (``LedgerClient.run_tool``, async tool) and the
sync one (``SyncLedgerClient.run_tool``, blocking tool with a heartbeat thread).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
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
from oncelog.producer.client import LedgerClient
from oncelog.producer.executor import ToolContext, ToolRun, ledger_tool, sync_ledger_tool
from oncelog.producer.partitioner import partition_for
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.schemas.models import PreviousAttempt
from oncelog.settings import Settings
from tests.integration.conftest import FAST, RunningProjector
from tests.integration.helpers import decisions_on, snapshots_of, wait_until_log_time_passes

pytestmark = pytest.mark.kafka

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
    """A tool doing ``duration_s`` of (simulated) work, with the same behaviour sync and async.

    ``during`` runs at the start of the call (another worker acting meanwhile);
    ``answer`` is what the reconcile hook returns.
    """

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
        if ctx.wait(max(0.0, self.duration_s - (time.monotonic() - start))):
            self.stopped_at = time.monotonic()
            ctx.raise_if_stopped()
        return self._end()

    async def async_fn(self, ctx: ToolContext) -> Any:
        start = self._begin(ctx)
        if self.during is not None:
            await asyncio.to_thread(self.during, ctx)
        try:
            await asyncio.sleep(max(0.0, self.duration_s - (time.monotonic() - start)))
        except asyncio.CancelledError:
            self.stopped_at = time.monotonic()
            raise
        return self._end()

    def sync_reconcile(self, previous: PreviousAttempt, ctx: ToolContext) -> Any:
        self.reconciled_with.append(previous)
        return self.answer

    async def async_reconcile(self, previous: PreviousAttempt, ctx: ToolContext) -> Any:
        return self.sync_reconcile(previous, ctx)

    def _begin(self, ctx: ToolContext) -> float:
        self.calls.append(ctx)
        return time.monotonic()

    def _end(self) -> Any:
        if self.error is not None:
            raise self.error
        return self.result


@dataclass
class Runner:
    """Runs a :class:`FakeTool` through one executor, blocking."""

    kind: str
    worker_id: str
    run_with: Callable[..., ToolRun]

    def run(self, tool: FakeTool, key: str = KEY, **options: Any) -> ToolRun:
        args: dict[str, Any] = {"tool_name": "charge", "params": ORDER} | options
        return self.run_with(tool, key, args)


@pytest.fixture(params=["async", "sync"])
def runner(
    request: pytest.FixtureRequest, projector: RunningProjector, topics: Settings
) -> Iterator[Runner]:
    """The executor under test, as worker ``worker-a``."""
    if request.param == "sync":
        with SyncLedgerClient(topics, worker_id="worker-a", timeouts=FAST) as sync:

            def run_sync(tool: FakeTool, key: str, args: dict[str, Any]) -> ToolRun:
                return sync.run_tool(
                    CHANNEL, key, fn=tool.sync_fn, reconcile=tool.sync_reconcile, **args
                )

            yield Runner("sync", sync.worker_id, run_sync)
        return
    loop = asyncio.new_event_loop()
    client = LedgerClient(topics, worker_id="worker-a", timeouts=FAST)
    client.open()

    def run_async(tool: FakeTool, key: str, args: dict[str, Any]) -> ToolRun:
        call = client.run_tool(
            CHANNEL, key, fn=tool.async_fn, reconcile=tool.async_reconcile, **args
        )
        return loop.run_until_complete(call)

    try:
        yield Runner("async", client.worker_id, run_async)
    finally:
        client.close()
        loop.close()


MakeClient = Callable[..., SyncLedgerClient]


def _claim(client: SyncLedgerClient, key: str = KEY, **kw: Any) -> Any:
    return client.claim_execution(CHANNEL, key, tool_name="charge", params=ORDER, **kw)


def test_heartbeats_keep_a_short_lease_alive_through_a_long_call(
    runner: Runner, make_client: MakeClient, topics: Settings
) -> None:
    other = make_client("worker-b")
    contenders: list[Any] = []

    def contend(ctx: ToolContext) -> None:
        # Past the first deadline, only the heartbeats can still hold the lease.
        wait_until_log_time_passes(ctx.execution.lease_deadline_ms + 1000)
        contenders.append(_claim(other))

    tool = FakeTool(result={"charge": "ch_1"}, duration_s=6.0, during=contend)
    run = runner.run(tool, lease_seconds=2)
    assert [c.status for c in contenders] == ["in_progress"]
    assert contenders[0].holder == "worker-a"
    assert run.status == "claimed"
    assert run.execution.epoch == 1
    assert run.execution.status == "completed"
    assert run.result == {"charge": "ch_1"}
    outcomes = [s.outcome.value for s in snapshots_of(topics, CHANNEL, run.execution.id)]
    # Every lease/3 over 6 s: about nine heartbeats; a few are enough to prove the point.
    assert outcomes.count("heartbeat_ok") >= 5
    assert outcomes[0] == "claimed"
    assert outcomes[-1] == "completed"


def test_a_cancel_stops_the_call_within_a_heartbeat(
    runner: Runner, make_client: MakeClient
) -> None:
    other = make_client("operator")
    lease = 3.0
    cancelled_at: list[float] = []

    def cancel(ctx: ToolContext) -> None:
        assert other.cancel_execution(ctx.execution, "user abort") == "cancel_requested"
        cancelled_at.append(time.monotonic())

    tool = FakeTool(duration_s=60.0, during=cancel)
    with pytest.raises(ExecutionCancelledError) as info:
        runner.run(tool, lease_seconds=lease)
    assert isinstance(info.value, LeaseLostError)
    assert info.value.code == "cancelled"
    assert info.value.reason == "user abort"
    assert tool.stopped_at is not None
    # One heartbeat interval, plus the round trip of that heartbeat's decision.
    assert tool.stopped_at - cancelled_at[0] < lease / 3 + 1.5
    # The cancel is durable: a later attempt does not silently run the tool again.
    with pytest.raises(ExecutionFailedError, match="cancelled: user abort"):
        runner.run(FakeTool(), lease_seconds=lease)


def test_reconcile_hook_sees_the_crashed_attempt_on_reclaim(
    runner: Runner, make_client: MakeClient
) -> None:
    crashed = make_client("worker-crashed")
    first = _claim(crashed, lease_seconds=1)
    assert first.status == "claimed"
    wait_until_log_time_passes(first.execution.lease_deadline_ms)  # the worker just stopped
    tool = FakeTool(result="charged")
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
    assert run.result == "charged"


def test_reconcile_answer_completes_without_calling_the_tool(
    runner: Runner, make_client: MakeClient
) -> None:
    crashed = make_client("worker-crashed")
    first = _claim(crashed, lease_seconds=1)
    wait_until_log_time_passes(first.execution.lease_deadline_ms)
    tool = FakeTool(answer={"charge": "ch_found_downstream"})
    run = runner.run(tool, lease_seconds=10)
    assert tool.calls == []
    assert run.reconciled is True
    assert run.execution.status == "completed"
    assert run.result == {"charge": "ch_found_downstream"}
    assert runner.run(FakeTool()).status == "replayed"


def test_replayed_returns_the_recorded_result_without_calling_the_tool(runner: Runner) -> None:
    first = runner.run(FakeTool(result={"n": 1}))
    tool = FakeTool(result={"n": 2})
    again = runner.run(tool)
    assert tool.calls == []
    assert again.status == "replayed"
    assert again.result == {"n": 1}
    assert again.execution.epoch == first.execution.epoch == 1


def test_a_raising_tool_records_a_failure_and_reraises(
    runner: Runner, make_client: MakeClient
) -> None:
    with pytest.raises(DeclinedError, match="card declined"):
        runner.run(FakeTool(error=DeclinedError("card declined")))
    with pytest.raises(ExecutionFailedError, match="DeclinedError: card declined"):
        _claim(make_client("worker-b"))


def test_a_retryable_failure_is_taken_over_at_once_with_the_error(runner: Runner) -> None:
    with pytest.raises(FlakyError):
        runner.run(FakeTool(error=FlakyError("gateway 503")))
    tool = FakeTool(result="second time lucky")
    run = runner.run(tool)
    assert run.status == "reclaimed"
    assert run.execution.epoch == 2
    [previous] = tool.reconciled_with
    assert previous.status.value == "FAILED"
    assert previous.error == "FlakyError: gateway 503"


def test_in_progress_raises_a_typed_error_by_default(
    runner: Runner, make_client: MakeClient
) -> None:
    held = _claim(make_client("worker-b"), lease_seconds=30)
    tool = FakeTool()
    with pytest.raises(ToolInProgressError) as info:
        runner.run(tool)
    assert isinstance(info.value, InProgressError)
    assert info.value.code == "in_progress"
    assert info.value.holder == "worker-b"
    assert info.value.lease_deadline_ms == held.execution.lease_deadline_ms
    assert tool.calls == []


def test_in_progress_waits_for_the_lease_to_lapse_with_the_option(
    runner: Runner, make_client: MakeClient
) -> None:
    held = _claim(make_client("worker-b"), lease_seconds=1)
    tool = FakeTool(result="after the wait")
    run = runner.run(tool, on_in_progress="wait", wait_timeout_s=20)
    assert run.status == "reclaimed"
    assert run.execution.epoch == 2
    assert [p.worker_id for p in tool.reconciled_with] == ["worker-b"]
    assert run.execution.completed_at_ms is not None
    assert run.execution.completed_at_ms >= held.execution.lease_deadline_ms


def test_in_progress_wait_is_bounded(runner: Runner, make_client: MakeClient) -> None:
    _claim(make_client("worker-b"), lease_seconds=60)
    tool = FakeTool()
    started = time.monotonic()
    with pytest.raises(LedgerTimeoutError, match="still held by worker-b"):
        runner.run(tool, on_in_progress="wait", wait_timeout_s=1.0)
    assert time.monotonic() - started < 10
    assert tool.calls == []


def _stall_until_reclaimed(ctx: ToolContext, other: SyncLedgerClient) -> None:
    """Block the event loop (a misbehaving tool), so no heartbeat runs, until a reclaim."""
    wait_until_log_time_passes(ctx.execution.lease_deadline_ms)
    assert _claim(other, lease_seconds=30).status == "reclaimed"


async def test_a_lost_lease_stops_the_call(
    projector: RunningProjector, make_client: MakeClient, topics: Settings
) -> None:
    other = make_client("worker-b")
    stopped: list[ToolContext] = []

    async def stalls_then_works(ctx: ToolContext) -> str:
        _stall_until_reclaimed(ctx, other)
        try:
            await asyncio.sleep(60)  # the next heartbeat is fenced and cancels this
        except asyncio.CancelledError:
            stopped.append(ctx)
            raise
        return "never"

    async with LedgerClient(topics, timeouts=FAST) as client:
        with pytest.raises(LeaseLostError, match="lease lost while the tool ran") as info:
            await client.run_tool(
                CHANNEL, KEY, tool_name="charge", params=ORDER, fn=stalls_then_works,
                lease_seconds=1,
            )  # fmt: skip
    assert not isinstance(info.value, ExecutionCancelledError)
    assert info.value.code == "lease_lost"
    assert [c.stopped for c in stopped] == [True]


async def test_a_result_after_a_lost_lease_is_fenced_and_flagged(
    projector: RunningProjector, make_client: MakeClient, topics: Settings
) -> None:
    other = make_client("worker-b")

    async def stalls_then_returns(ctx: ToolContext) -> str:
        _stall_until_reclaimed(ctx, other)
        return "charged twice?"

    async with LedgerClient(topics, timeouts=FAST) as client:
        with pytest.raises(LeaseLostError, match="duplicate_effect_suspected"):
            await client.run_tool(
                CHANNEL, KEY, tool_name="charge", params=ORDER, fn=stalls_then_returns,
                lease_seconds=1,
            )  # fmt: skip
    decisions = decisions_on(topics, partition_for(CHANNEL, topics.partitions))
    flagged = [d for d in decisions if d.duplicate_effect_suspected]
    assert [d.outcome.value for d in flagged] == ["stale_claim"]


async def test_async_decorator_runs_once_and_replays(
    projector: RunningProjector, topics: Settings
) -> None:
    calls: list[tuple[int, str]] = []
    async with LedgerClient(topics, timeouts=FAST) as client:

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


def test_sync_decorator_runs_once_and_replays(
    projector: RunningProjector, topics: Settings
) -> None:
    calls: list[int] = []
    with SyncLedgerClient(topics, timeouts=FAST) as client:

        @sync_ledger_tool(client, tool_name="send_email", effect="external")
        def send(ctx: ToolContext, *, to: str) -> str:
            calls.append(ctx.epoch)
            return f"sent to {to}"

        assert send(CHANNEL, step=3, to="a@example.com") == "sent to a@example.com"
        again = send.run(CHANNEL, step=3, to="a@example.com")
        assert again.status == "replayed"
        assert again.execution.key_name == "step-3"
        assert calls == [1]
