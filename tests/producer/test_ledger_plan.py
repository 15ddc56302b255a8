"""The plans of several requests: written once, the same under the blocking and the awaiting
driver (on the in-memory ledger: no broker), and fed by hand without a ledger."""

from __future__ import annotations

import typing
from typing import Any

import pytest

from oncelog.errors import InvalidArgumentError
from oncelog.producer import ledger_plan
from oncelog.producer.forks import adopt_execution
from oncelog.producer.ledger_plan import (
    Blocking,
    Exclusive,
    LedgerPlan,
    Pause,
    PlanLock,
    ReadChannel,
    Record,
    RunTool,
    Send,
    adrive,
    drive,
)
from oncelog.producer.tool_model import ToolJob, ToolSpec, ToolTarget
from oncelog.testing import InMemoryLedger


def _charged(ledger: InMemoryLedger, channel: str) -> None:
    ledger.sync_client().run_tool(
        channel, "charge#1", fn=lambda _: {"id": "ch_1"}, tool_name="charge", params={"n": 1}
    )


def _every_step(lock: PlanLock) -> LedgerPlan[list[Any]]:
    """One step of each kind, and what each answered."""
    target = ToolTarget("run-b", "mark", None)
    pure = ToolSpec("mark", effect="pure")
    answers = [
        len((yield ReadChannel("run-a"))),
        (yield Record(pure, target, {"m": 1}, {"m": 1})).result,
        (yield Pause(0.0)),
        (yield Blocking(lambda: "read")),
        (yield Exclusive(lock, _one_read())),
    ]
    return answers


def _one_read() -> LedgerPlan[str]:
    read: str = yield Blocking(lambda: "locked")
    return read


async def test_both_drivers_perform_every_kind_of_step_alike() -> None:
    """Each step type is performed by both drivers, with the same answers: a step the one
    driver knows and the other does not fails here."""
    kinds = set(typing.get_args(ledger_plan.LedgerStep))
    covered = {Send, ReadChannel, RunTool, Record, Pause, Blocking, Exclusive}
    assert kinds == covered
    blocking, awaited = InMemoryLedger(), InMemoryLedger()
    _charged(blocking, "run-a")
    _charged(awaited, "run-a")
    one = drive(_every_step(PlanLock()), blocking.sync_client())
    other = await adrive(_every_step(PlanLock()), awaited.client())
    assert one == other == [1, {"m": 1}, None, "read", "locked"]
    spec, target = ToolSpec("t", effect="pure"), ToolTarget("c", "k", None)
    run = drive(_single(RunTool(ToolJob(spec, target, {}, lambda _: 7))), blocking.sync_client())

    async def seven(_: Any) -> int:
        return 7

    arun = await adrive(_single(RunTool(ToolJob(spec, target, {}, seven))), awaited.client())
    assert run.result == arun.result == 7


def _single(step: Any) -> LedgerPlan[Any]:
    return (yield step)


async def test_a_fork_is_the_same_records_under_either_client() -> None:
    blocking, awaited = InMemoryLedger(), InMemoryLedger()
    for ledger in (blocking, awaited):
        _charged(ledger, "run-a")
    one = blocking.sync_client().fork_channel("run-a", "run-b")
    other = await awaited.client().fork_channel("run-a", "run-b")
    assert [e.key_name for e in one.inherited] == [e.key_name for e in other.inherited]
    assert [e.result for e in one.inherited] == [{"id": "ch_1"}]

    def made(ledger: InMemoryLedger) -> list[tuple[str, str]]:
        return [(r.request.operation_id, r.outcome.outcome.value) for r in ledger.log]

    assert made(blocking) == made(awaited)
    assert made(blocking)[-1][1] == "inherited"


def test_a_step_error_is_thrown_into_the_plan_where_it_yielded() -> None:
    """The plan judges a step's error (here: catches it) instead of the driver ending."""

    def broken(_: Any) -> None:
        raise ValueError("the tool broke")

    job: ToolJob[Any, Any] = ToolJob(
        ToolSpec("t", effect="pure"), ToolTarget("c", "k", None), {}, broken
    )

    def plan() -> LedgerPlan[str]:
        try:
            yield RunTool(job)
        except ValueError as exc:
            return f"seen by the plan: {exc}"
        return "no error"

    assert drive(plan(), InMemoryLedger().sync_client()) == "seen by the plan: the tool broke"


def test_a_plan_checks_its_arguments_before_any_step() -> None:
    plan = adopt_execution("run-b", "", tool_name="t", params={}, from_channels=["a"])
    with pytest.raises(InvalidArgumentError):
        next(plan)
