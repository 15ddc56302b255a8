"""The executor's plan without a ledger: feed it answers, check the steps it asks for."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oncelog.errors import (
    ExecutionCancelledError,
    InvalidArgumentError,
    LeaseLostError,
    LedgerError,
    LedgerTimeoutError,
    ResultUnrecordableError,
    StaleClaimError,
    ToolInProgressError,
)
from oncelog.producer.results import Claim, ClaimStatus, Execution, Heartbeat
from oncelog.producer.tool_model import StopSignal, ToolOutcome, ToolSpec, ToolTarget
from oncelog.producer.tool_plan import (
    ClaimStep,
    CompleteStep,
    FailStep,
    HeartbeatStep,
    Plan,
    RunToolStep,
    WaitStep,
    heartbeat_plan,
    plan_run,
)
from oncelog.testing import ManualClock

T0 = 1_000_000
TARGET = ToolTarget("run-1", "charge:1", None)
PARAMS = {"order_id": "1"}
TOKEN = "t" * 32


def execution(status: str = "claimed", *, deadline_ms: int = T0 + 30_000, **kw: Any) -> Execution:
    fields: dict[str, Any] = {
        "id": "op-1", "channel_id": "run-1", "key_name": "charge:1", "tool_name": "charge",
        "params": PARAMS, "request_hash": "h" * 64, "idempotency_key": "ik", "epoch": 1,
        "status": status, "worker_id": "worker-a", "lease_deadline_ms": deadline_ms,
        "cancel_requested": False,
    }  # fmt: skip
    return Execution(**(fields | kw))


def claim(status: ClaimStatus, **kw: Any) -> Claim:
    return Claim(status, execution(), TOKEN, **kw)


def start(spec: ToolSpec | None = None, clock: ManualClock | None = None) -> Plan[Any]:
    plan = plan_run(spec or ToolSpec("charge"), TARGET, PARAMS, clock or ManualClock(T0))
    first = next(plan)
    assert isinstance(first, ClaimStep)
    assert first.options["tool_name"] == "charge"
    assert first.options["params"] == PARAMS
    return plan


def finish(plan: Plan[Any], reply: Any) -> Any:
    with pytest.raises(StopIteration) as done:
        plan.send(reply)
    return done.value.value


def run_tool_step(plan: Plan[Any], granted: Claim | None = None) -> RunToolStep:
    step = plan.send(granted or claim(ClaimStatus.CLAIMED))
    assert isinstance(step, RunToolStep)
    return step


def test_a_replayed_claim_returns_the_recorded_result_without_running() -> None:
    run = finish(start(), claim(ClaimStatus.REPLAYED, result={"n": 1}))
    assert (run.status, run.result) == ("replayed", {"n": 1})


def test_a_result_is_completed_and_the_recorded_execution_returned() -> None:
    plan = start()
    step = run_tool_step(plan)
    assert step.ctx.epoch == 1
    assert TOKEN not in repr(step)  # a capability: never in a repr
    complete = plan.send(ToolOutcome("charged"))
    assert isinstance(complete, CompleteStep)
    assert complete.result == "charged"
    assert TOKEN not in repr(complete)
    recorded = execution("completed", result="charged")
    run = finish(plan, recorded)
    assert (run.status, run.result, run.execution) == ("claimed", "charged", recorded)


@pytest.mark.parametrize("settled", ["found", "not_found", None])
def test_how_the_reconcile_hook_settled_goes_with_the_completion(settled: Any) -> None:
    plan = start()
    run_tool_step(plan, claim(ClaimStatus.RECLAIMED))
    complete = plan.send(ToolOutcome("charged", reconciled_as=settled))
    assert isinstance(complete, CompleteStep)
    assert complete.reconciled == settled
    run = finish(plan, execution("completed", result="charged"))
    assert (run.reconciled_as, run.reconciled) == (settled, settled == "found")


def test_a_failure_after_reconciling_says_not_found() -> None:
    plan = start()
    run_tool_step(plan, claim(ClaimStatus.RECLAIMED))
    fail = plan.send(ToolOutcome(error=ValueError("declined"), reconciled_as="not_found"))
    assert isinstance(fail, FailStep)
    assert fail.reconciled == "not_found"


def test_a_fenced_completion_is_a_lost_lease() -> None:
    plan = start()
    run_tool_step(plan)
    plan.send(ToolOutcome("charged twice?"))
    with pytest.raises(LeaseLostError, match="duplicate_effect_suspected"):
        plan.throw(StaleClaimError("fenced"))


class FlakyError(Exception):
    retryable = True


@pytest.mark.parametrize(
    ("error", "retryable"),
    [(ValueError("declined"), False), (FlakyError("503"), True), (TimeoutError("slow"), True)],
)
def test_an_exception_is_recorded_then_reraised(error: Exception, retryable: bool) -> None:
    plan = start()
    run_tool_step(plan)
    fail = plan.send(ToolOutcome(error=error))
    assert isinstance(fail, FailStep)
    assert fail.error == f"{type(error).__name__}: {error}"
    assert fail.retryable is retryable
    with pytest.raises(type(error)):
        plan.send(execution("failed"))


def test_a_failure_the_ledger_cannot_record_keeps_the_callers_error() -> None:
    plan = start()
    run_tool_step(plan)
    plan.send(ToolOutcome(error=ValueError("declined")))
    with pytest.raises(ValueError, match="declined") as info:
        plan.throw(LedgerError("ledger down"))
    assert any("recording the failure failed" in note for note in info.value.__notes__)


@pytest.mark.parametrize("error", [KeyboardInterrupt(), SystemExit(1)])
def test_a_base_exception_is_not_recorded(error: BaseException) -> None:
    plan = start()
    run_tool_step(plan)
    with pytest.raises(type(error)):
        plan.send(ToolOutcome(error=error))


def test_a_cancel_is_recorded_as_a_final_failure() -> None:
    plan = start()
    step = run_tool_step(plan)
    step.ctx.stop.set(cancelled=True, reason="user abort")
    fail = plan.send(ToolOutcome(error=ExecutionCancelledError("stop", reason="user abort")))
    assert isinstance(fail, FailStep)
    assert (fail.error, fail.retryable) == ("cancelled: user abort", False)
    with pytest.raises(ExecutionCancelledError) as info:
        plan.send(execution("failed"))
    assert info.value.reason == "user abort"


def test_a_lost_lease_records_nothing() -> None:
    plan = start()
    step = run_tool_step(plan)
    step.ctx.stop.set(cancelled=False, reason="fenced")
    with pytest.raises(LeaseLostError, match="lease lost while the tool ran: fenced"):
        plan.send(ToolOutcome(error=RuntimeError("cancelled by the stop")))


def test_in_progress_raises_by_default() -> None:
    plan = start()
    with pytest.raises(ToolInProgressError) as info:
        plan.send(claim(ClaimStatus.IN_PROGRESS, holder="worker-b", lease_deadline_ms=T0 + 5000))
    assert info.value.holder == "worker-b"


def test_in_progress_waits_for_the_lapse_then_gives_up_at_the_bound() -> None:
    clock = ManualClock(T0)
    plan = start(ToolSpec("charge", on_in_progress="wait", wait_timeout_s=10), clock)
    held = claim(ClaimStatus.IN_PROGRESS, holder="worker-b", lease_deadline_ms=T0 + 4000)
    pause = plan.send(held)
    assert isinstance(pause, WaitStep)
    assert not pause.beside_tool
    assert pause.seconds == pytest.approx(4.05)  # just past the deadline
    clock.advance(pause.seconds)
    assert isinstance(plan.send(None), ClaimStep)
    # Still held (a heartbeat moved the deadline): the wait is capped by what is left.
    pause = plan.send(claim(ClaimStatus.IN_PROGRESS, lease_deadline_ms=T0 + 60_000))
    assert isinstance(pause, WaitStep)
    assert not pause.beside_tool
    assert pause.seconds == pytest.approx(10 - 4.05)
    clock.advance(pause.seconds)
    plan.send(None)
    with pytest.raises(LedgerTimeoutError, match="still held"):
        plan.send(claim(ClaimStatus.IN_PROGRESS, lease_deadline_ms=T0 + 60_000))


def test_a_reclaim_after_the_wait_runs_the_tool() -> None:
    plan = start(ToolSpec("charge", on_in_progress="wait"))
    plan.send(claim(ClaimStatus.IN_PROGRESS, lease_deadline_ms=T0 + 1000))
    plan.send(None)
    assert isinstance(plan.send(claim(ClaimStatus.RECLAIMED)), RunToolStep)


# --- the heartbeat plan -------------------------------------------------------------------

LEASE_S = 3.0


def beats(clock: ManualClock) -> tuple[Plan[None], StopSignal]:
    stop = StopSignal(clock)
    granted = Claim(ClaimStatus.CLAIMED, execution(deadline_ms=T0 + 3000), TOKEN)
    plan = heartbeat_plan(ToolSpec("charge", lease_seconds=LEASE_S), granted, stop)
    timer = next(plan)
    assert timer == WaitStep(LEASE_S / 3, beside_tool=True)
    return plan, stop


def test_the_heartbeat_stops_when_the_tool_finishes() -> None:
    plan, stop = beats(ManualClock(T0))
    finish(plan, True)
    assert not stop.is_set


def test_a_fenced_heartbeat_stops_the_tool_at_once() -> None:
    plan, stop = beats(ManualClock(T0))
    assert isinstance(plan.send(False), HeartbeatStep)
    with pytest.raises(StopIteration):
        plan.throw(StaleClaimError("fenced"))
    assert stop.is_set
    assert not stop.cancelled


def test_a_requested_cancel_stops_the_tool_as_cancelled() -> None:
    plan, stop = beats(ManualClock(T0))
    plan.send(False)
    finish(plan, Heartbeat(T0 + 6000, cancel_requested=True, cancel_reason="user"))
    assert (stop.is_set, stop.cancelled, stop.reason) == (True, True, "user")


Event = tuple[str, int]  # ("ok", new deadline offset) | ("timeout", 0) | ("fenced", 0), at a time


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["ok", "timeout", "fenced"]),
            st.integers(0, 4000),  # how far the clock moved before the answer
        ),
        max_size=12,
    )
)
def test_the_lease_counts_as_lost_exactly_when_it_is(events: list[Event]) -> None:
    """Lost on a fence, or on an unconfirmed beat at or past the last confirmed deadline."""
    clock = ManualClock(T0)
    plan, stop = beats(clock)
    deadline = T0 + 3000
    for kind, elapsed in events:
        assert isinstance(plan.send(False), HeartbeatStep)
        clock.advance(elapsed / 1000)
        try:
            if kind == "ok":
                deadline = clock.now_ms() + 3000
                step = plan.send(Heartbeat(deadline, cancel_requested=False))
            else:
                error = StaleClaimError("f") if kind == "fenced" else LedgerTimeoutError("t")
                step = plan.throw(error)
        except StopIteration:
            assert stop.is_set
            assert kind == "fenced" or (kind == "timeout" and clock.now_ms() >= deadline)
            return
        assert isinstance(step, WaitStep)
        assert step.beside_tool
        assert not stop.is_set
        assert kind == "ok" or (kind == "timeout" and clock.now_ms() < deadline)


# --- a result the ledger cannot record ------------------------------------------------


def test_a_refused_result_is_recorded_as_a_failure_for_good_and_raised() -> None:
    plan = start()
    run_tool_step(plan, claim(ClaimStatus.RECLAIMED))
    plan.send(ToolOutcome({"n": float("nan")}, reconciled_as="found"))
    fail = plan.throw(InvalidArgumentError("refused"))
    assert isinstance(fail, FailStep)
    assert (fail.retryable, fail.reconciled) == (False, "found")
    assert fail.error.startswith("result_unrecordable: nan has no canonical JSON form")
    assert "sha256 of its repr: " in fail.error
    with pytest.raises(ResultUnrecordableError, match="the tool ran") as raised:
        plan.send(execution("failed", error=fail.error))
    assert "failed for good with code result_unrecordable" in str(raised.value)


def test_a_refusal_of_a_recordable_result_is_not_called_unrecordable() -> None:
    plan = start()
    run_tool_step(plan)
    plan.send(ToolOutcome({"n": 1}))
    with pytest.raises(InvalidArgumentError, match="something else") as raised:
        plan.throw(InvalidArgumentError("something else"))
    assert not isinstance(raised.value, ResultUnrecordableError)


def test_an_unrecordable_result_whose_failure_is_fenced_says_so() -> None:
    plan = start()
    run_tool_step(plan)
    plan.send(ToolOutcome("x" * (1024 * 1024)))  # two quotes over the limit
    plan.throw(InvalidArgumentError("too large"))
    with pytest.raises(ResultUnrecordableError, match="recording that failed too"):
        plan.throw(StaleClaimError("fenced"))


def test_the_result_encoder_runs_before_the_completion() -> None:
    plan = start(ToolSpec("charge", result_encoder=lambda r: {"wrapped": r}))
    run_tool_step(plan)
    complete = plan.send(ToolOutcome(7))
    assert isinstance(complete, CompleteStep)
    assert complete.result == {"wrapped": 7}
