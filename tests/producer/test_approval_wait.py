"""run_tool and the decorators under an approval rule: pending at once, or a bounded wait.

Through the in-memory ledger's real codec and fold; the person deciding is scripted into
the claims (a decision made before the n-th claim), so no test sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from oncelog.errors import (
    ApprovalDeniedError,
    ApprovalPendingError,
    ConflictError,
    InvalidArgumentError,
)
from oncelog.identity.ids import operation_id
from oncelog.producer import ledger_plan
from oncelog.producer.approval_rule import RequireApproval
from oncelog.producer.client import ClientPlan
from oncelog.producer.executor import ToolContext, sync_ledger_tool
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.testing import InMemoryLedger

OVER_LIMIT = RequireApproval(when=lambda p: p["amount_cents"] > 10_000)
WAITING = RequireApproval(on_pending="wait", wait_timeout_s=30, poll_s=1)


class Refunds:
    """The effect: every refund that ran, with its params."""

    def __init__(self) -> None:
        self.done: list[dict[str, Any]] = []

    def __call__(self, ctx: ToolContext) -> dict[str, Any]:
        self.done.append(dict(ctx.params))
        return {"refunded": ctx.params["amount_cents"]}


def _run(client: Any, fn: Any, amount: int, rule: RequireApproval, key: str = "refund:1") -> Any:
    return client.run_tool(
        "run-1", key, fn=fn, tool_name="refund", params={"order_id": "1", "amount_cents": amount},
        approval=rule, downstream_dedupes=True,
    )  # fmt: skip


def _decide(ledger: InMemoryLedger, request_hash: str, approve: bool, key: str = "refund:1") -> Any:
    return ledger.sync_client(worker_id="desk").decide_approval(
        "run-1", key, approver="ann", request_hash=request_hash, approve=approve,
        reason="" if approve else "over the balance",
    )  # fmt: skip


class DecidesAtClaim:
    """A client whose n-th claim is preceded by a person's decision (the wait's scenery)."""

    def __init__(self, ledger: InMemoryLedger, at: int, approve: bool) -> None:
        self._client = ledger.sync_client(worker_id="agent")
        self._ledger, self._at, self._approve = ledger, at, approve
        self.claims = 0

    # Driven with this client, so that the plan's claims come here.
    run_tool = ClientPlan(ledger_plan.run_tool)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def claim_execution(self, *args: Any, **kwargs: Any) -> Any:
        self.claims += 1
        if self.claims == self._at:
            state = self._ledger.state(operation_id("run-1", "refund:1"))
            assert state is not None
            _decide(self._ledger, state.request_hash, self._approve)
        return self._client.claim_execution(*args, **kwargs)


def test_under_the_limit_runs_without_approval() -> None:
    ledger, refunds = InMemoryLedger(), Refunds()
    run = _run(ledger.sync_client(worker_id="agent"), refunds, 2_500, OVER_LIMIT)
    assert run.status == "claimed"
    assert refunds.done == [{"order_id": "1", "amount_cents": 2_500}]


def test_pending_at_once_then_the_approved_call_runs_once() -> None:
    ledger, refunds = InMemoryLedger(), Refunds()
    agent = ledger.sync_client(worker_id="agent")
    with pytest.raises(ApprovalPendingError) as pending:
        _run(agent, refunds, 25_000, OVER_LIMIT)
    err = pending.value
    assert err.code == "approval_pending"
    assert (err.channel_id, err.key_name, err.tool_name) == ("run-1", "refund:1", "refund")
    assert err.params == {"order_id": "1", "amount_cents": 25_000}
    assert err.deadline_ms is not None
    assert refunds.done == []
    # A new process (a new client) asks again: still pending, no new intent.
    with pytest.raises(ApprovalPendingError):
        _run(ledger.sync_client(worker_id="agent"), refunds, 25_000, OVER_LIMIT)
    _decide(ledger, err.request_hash, approve=True)
    run = _run(ledger.sync_client(worker_id="agent"), refunds, 25_000, OVER_LIMIT)
    assert (run.status, run.execution.epoch) == ("claimed", 1)
    assert _run(agent, refunds, 25_000, OVER_LIMIT).status == "replayed"
    assert refunds.done == [{"order_id": "1", "amount_cents": 25_000}]


def test_the_wait_ends_at_the_decision() -> None:
    ledger, refunds = InMemoryLedger(), Refunds()
    client = DecidesAtClaim(ledger, at=3, approve=True)
    run = _run(client, refunds, 25_000, WAITING)
    assert run.result == {"refunded": 25_000}
    assert client.claims == 3
    assert refunds.done == [{"order_id": "1", "amount_cents": 25_000}]


def test_the_wait_is_bounded() -> None:
    ledger, refunds = InMemoryLedger(), Refunds()
    started = ledger.clock.now_ms()
    with pytest.raises(ApprovalPendingError, match="after waiting 30"):
        _run(ledger.sync_client(worker_id="agent"), refunds, 25_000, WAITING)
    assert ledger.clock.now_ms() - started == 30_000
    assert refunds.done == []


def test_a_deny_met_while_waiting_ends_with_the_reason() -> None:
    ledger, refunds = InMemoryLedger(), Refunds()
    with pytest.raises(ApprovalDeniedError, match="over the balance"):
        _run(DecidesAtClaim(ledger, at=2, approve=False), refunds, 25_000, WAITING)
    assert refunds.done == []


def test_another_amount_after_the_approval_is_a_conflict() -> None:
    ledger, refunds = InMemoryLedger(), Refunds()
    _run(DecidesAtClaim(ledger, at=2, approve=True), refunds, 25_000, WAITING)
    with pytest.raises(ConflictError):
        _run(ledger.sync_client(worker_id="agent"), refunds, 99_000, WAITING)
    assert refunds.done == [{"order_id": "1", "amount_cents": 25_000}]


def test_the_async_driver_runs_the_same_plan() -> None:
    ledger, done = InMemoryLedger(), []

    async def refund(ctx: ToolContext) -> int:
        done.append(ctx.params["amount_cents"])
        return 1

    async def scenario() -> None:
        async with ledger.client(worker_id="agent") as agent:
            with pytest.raises(ApprovalPendingError) as pending:
                await _run(agent, refund, 25_000, OVER_LIMIT)
            _decide(ledger, pending.value.request_hash, approve=True)
            assert (await _run(agent, refund, 25_000, OVER_LIMIT)).status == "claimed"

    asyncio.run(scenario())
    assert done == [25_000]


def test_the_decorator_takes_the_rule() -> None:
    ledger, refunds = InMemoryLedger(), Refunds()
    client: Callable[[], SyncLedgerClient] = lambda: ledger.sync_client(worker_id="agent")  # noqa: E731

    @sync_ledger_tool(client, approval=OVER_LIMIT, downstream_dedupes=True)
    def refund(ctx: ToolContext, order_id: str, amount_cents: int) -> dict[str, Any]:
        return refunds(ctx)

    with pytest.raises(ApprovalPendingError) as pending:
        refund("run-1", "refund:1", order_id="1", amount_cents=25_000)
    _decide(ledger, pending.value.request_hash, approve=True)
    assert refund("run-1", "refund:1", order_id="1", amount_cents=25_000) == {"refunded": 25_000}
    assert refunds.done == [{"order_id": "1", "amount_cents": 25_000}]


def test_a_rule_checks_its_options() -> None:
    with pytest.raises(InvalidArgumentError):
        RequireApproval(on_pending="later")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError):
        RequireApproval(poll_s=0)
