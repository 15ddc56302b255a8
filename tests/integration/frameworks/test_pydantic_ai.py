"""Pydantic AI tools through the ledger, driven by FunctionModel: crash, rerun, replay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from oncelog.errors import ConflictError
from oncelog.identity.ids import operation_id
from oncelog.integrations import LedgerRun, UnguardedToolWarning
from oncelog.integrations.pydantic_ai import ledger_toolset
from oncelog.schemas.models import Effect
from oncelog.testing import InMemoryLedger
from tests.integration.contract import Backend
from tests.integration.frameworks import meta_server
from tests.integration.frameworks.downstream import Crash, Payments


def _model(order_id: str, *, crash: bool) -> FunctionModel:
    """Asks for one charge, then (unless the process crashes first) answers in text."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if not returned:
            args = {"order_id": order_id, "amount_cents": 4200}
            return ModelResponse(parts=[ToolCallPart("charge", args)])
        if crash:
            raise Crash("the process dies before the model's next turn")
        return ModelResponse(parts=[TextPart(f"charged: {returned[-1].content}")])

    return FunctionModel(respond)


def _agent(
    run: LedgerRun, payments: Payments, model: FunctionModel | TestModel
) -> Agent[None, str]:
    def charge(order_id: str, amount_cents: int) -> dict[str, Any]:
        """Charge the customer for an order."""
        return payments.charge(order_id, amount_cents)

    return Agent(model, toolsets=[ledger_toolset([charge], run)])


async def test_a_rerun_after_a_crash_replays_the_charge(ledger_backend: Backend) -> None:
    payments = Payments()
    first = LedgerRun(ledger_backend.async_client(), "run-42")
    with pytest.raises(Crash):
        await _agent(first, payments, _model("4471", crash=True)).run("charge order 4471")
    rerun = LedgerRun(ledger_backend.async_client(), "run-42")
    answer = await _agent(rerun, payments, _model("4471", crash=False)).run("charge order 4471")
    assert len(payments.charges) == 1
    assert "ch_1" in answer.output


async def test_a_rerun_whose_model_asks_other_arguments_raises_a_conflict() -> None:
    ledger, payments = InMemoryLedger(), Payments()
    with pytest.raises(Crash):
        await _agent(
            LedgerRun(ledger.client(), "run-42"), payments, _model("4471", crash=True)
        ).run("go")
    with pytest.raises(ConflictError):
        await _agent(
            LedgerRun(ledger.client(), "run-42"), payments, _model("9999", crash=False)
        ).run("go")
    assert len(payments.charges) == 1


async def test_a_model_retry_is_a_retryable_failure_and_the_retry_the_next_call() -> None:
    ledger = InMemoryLedger()
    seen: list[int] = []

    def charge(amount_cents: int) -> str:
        """Charge an amount."""
        seen.append(amount_cents)
        if amount_cents < 0:
            raise ModelRetry("the amount must be positive")
        return "ok"

    calls = iter([{"amount_cents": -1}, {"amount_cents": 5}])

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        args = next(calls, None)
        if args is None:
            return ModelResponse(parts=[TextPart("done")])
        return ModelResponse(parts=[ToolCallPart("charge", args)])

    run = LedgerRun(ledger.client(), "run-1")
    await Agent(FunctionModel(respond), toolsets=[ledger_toolset([charge], run)]).run("go")
    assert seen == [-1, 5]
    first = ledger.execution(operation_id("run-1", "charge#1"))
    second = ledger.execution(operation_id("run-1", "charge#2"))
    state = ledger.state(operation_id("run-1", "charge#1"))
    assert first is not None
    assert first.status == "failed"
    assert state is not None
    assert state.retryable, first.error
    assert second is not None
    assert second.result == "ok"


async def test_the_test_model_calls_every_tool_through_the_ledger() -> None:
    ledger, payments = InMemoryLedger(), Payments()
    run = LedgerRun(ledger.client(), "run-7")
    await _agent(run, payments, TestModel()).run("charge something")
    execution = ledger.execution(operation_id("run-7", "charge#1"))
    assert execution is not None
    assert execution.status == "completed"
    assert payments.charges[0]["idempotency_key"] == execution.idempotency_key


async def test_an_mcp_toolset_sends_the_idempotency_key_and_takes_the_servers_annotations() -> None:
    ledger = InMemoryLedger()
    # A subprocess importing oncelog and mcp: slow to start on a loaded machine.
    toolset = MCPToolset(Path(meta_server.__file__), init_timeout=60)

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if any(isinstance(p, ToolReturnPart) for m in messages for p in m.parts):
            return ModelResponse(parts=[TextPart("done")])
        args = {"order_id": "7"}
        return ModelResponse(parts=[ToolCallPart("charge", args), ToolCallPart("lookup", args)])

    run = LedgerRun(ledger.client(), "run-5")
    agent = Agent(FunctionModel(respond), toolsets=[ledger_toolset(toolset, run)])
    with pytest.warns(UnguardedToolWarning, match="'charge'"):  # lookup is read only: pure
        async with agent:
            await agent.run("charge order 7")
    execution = ledger.execution(operation_id("run-5", "charge#1"))
    assert execution is not None
    assert execution.result == {
        "order_id": "7", "idempotency_key": execution.idempotency_key, "epoch": 1,
    }  # fmt: skip
    states = [ledger.state(operation_id("run-5", k)) for k in ("charge#1", "lookup#1")]
    assert [None if s is None else s.effect for s in states] == [Effect.EXTERNAL, Effect.PURE]
