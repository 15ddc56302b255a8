"""OpenAI Agents SDK function tools through the ledger, driven by a scripted Model."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent, FunctionTool, Runner, UserError, function_tool, set_tracing_disabled
from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from oncelog.errors import ConflictError
from oncelog.identity.ids import operation_id
from oncelog.integrations import LedgerRun
from oncelog.integrations.openai_agents import ledger_tools
from oncelog.testing import InMemoryLedger
from tests.integration.contract import Backend
from tests.integration.frameworks.downstream import Crash, Payments

set_tracing_disabled(True)  # no trace exporter: these tests never touch the network


class ScriptedModel(Model):
    """Asks for one charge; once the tool's output is in, answers (or the process crashes)."""

    def __init__(self, order_id: str, *, crash: bool) -> None:
        self.order_id, self.crash = order_id, crash

    async def get_response(
        self, system_instructions: str | None, input: str | list[TResponseInputItem],
        *args: Any, **kwargs: Any,
    ) -> ModelResponse:  # fmt: skip
        items: list[Any] = list(input)
        outputs = [
            i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
        if not outputs:
            args_json = json.dumps({"order_id": self.order_id, "amount_cents": 4200})
            call = ResponseFunctionToolCall(
                type="function_call", call_id="call-1", name="charge", arguments=args_json
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        if self.crash:
            raise Crash("the process dies before the model's next turn")
        text = ResponseOutputText(
            type="output_text", text=f"charged: {outputs[-1]['output']}", annotations=[]
        )
        message = ResponseOutputMessage(
            id="msg-1", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError


def _tools(payments: Payments) -> list[FunctionTool]:
    @function_tool
    def charge(order_id: str, amount_cents: int) -> dict[str, Any]:
        """Charge the customer for an order."""
        return payments.charge(order_id, amount_cents)

    return [charge]


async def _run(run: LedgerRun, payments: Payments, model: ScriptedModel) -> str:
    agent = Agent(name="billing", model=model, tools=ledger_tools(_tools(payments), run))
    result = await Runner.run(agent, "charge order 4471")
    return str(result.final_output)


async def test_a_rerun_after_a_crash_replays_the_charge(ledger_backend: Backend) -> None:
    payments = Payments()
    with pytest.raises(Crash):
        await _run(
            LedgerRun(ledger_backend.async_client(), "run-42"),
            payments,
            ScriptedModel("4471", crash=True),
        )
    rerun = LedgerRun(ledger_backend.async_client(), "run-42")
    answer = await _run(rerun, payments, ScriptedModel("4471", crash=False))
    assert len(payments.charges) == 1
    assert "ch_1" in answer


async def test_a_rerun_whose_model_asks_other_arguments_raises_a_conflict() -> None:
    ledger, payments = InMemoryLedger(), Payments()
    with pytest.raises(Crash):
        await _run(
            LedgerRun(ledger.client(), "run-42"), payments, ScriptedModel("4471", crash=True)
        )
    # The SDK wraps a tool's foreign exception in its UserError, the ConflictError as cause.
    with pytest.raises(UserError, match=r"Error running tool charge: \[conflict\]") as info:
        await _run(
            LedgerRun(ledger.client(), "run-42"), payments, ScriptedModel("9999", crash=False)
        )
    assert isinstance(info.value.__cause__, ConflictError)
    assert len(payments.charges) == 1


async def test_the_tool_gets_the_calls_idempotency_key() -> None:
    ledger, payments = InMemoryLedger(), Payments()
    await _run(LedgerRun(ledger.client(), "run-5"), payments, ScriptedModel("1", crash=False))
    execution = ledger.execution(operation_id("run-5", "charge#1"))
    assert execution is not None
    assert payments.charges == [
        {
            "order_id": "1",
            "amount_cents": 4200,
            "idempotency_key": execution.idempotency_key,
            "epoch": 1,
        }
    ]
