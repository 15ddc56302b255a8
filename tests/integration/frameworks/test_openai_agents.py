"""OpenAI Agents SDK function tools through the ledger, driven by a scripted Model."""

from __future__ import annotations

import sys
from typing import Any, cast

import httpx
import pytest
from agents import Agent, FunctionTool, Runner, UserError, function_tool, set_tracing_disabled
from agents.mcp import MCPServerStdio, MCPUtil
from agents.tool_context import ToolContext as AgentsToolContext

from drills.sample.downstream import start
from oncelog.errors import ConflictError
from oncelog.identity.ids import operation_id
from oncelog.integrations import LedgerRun, current_call
from oncelog.integrations.openai_agents import ledger_meta_resolver, ledger_tools
from oncelog.schemas.models import Effect
from oncelog.testing import InMemoryLedger
from tests.integration.contract import Backend
from tests.integration.frameworks import meta_server
from tests.integration.frameworks.downstream import Crash, Payments
from tests.integration.frameworks.scripted import ScriptedModel

set_tracing_disabled(True)  # no trace exporter: these tests never touch the network


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


# --- a tool's exception is a failure, not a completed result --------------------------------


def _http_tools(url: str) -> list[FunctionTool]:
    @function_tool
    def charge(order_id: str, amount_cents: int) -> str:
        """Charge the customer for an order."""
        key = current_call().idempotency_key
        answer = httpx.post(
            f"{url}/effect", json={"op": order_id}, headers={"Idempotency-Key": key}
        )
        return str(answer.json()["effect_id"])

    return [charge]


async def _run_http(run: LedgerRun, url: str, *, as_result: bool = False) -> str:
    tools = ledger_tools(_http_tools(url), run, error_message_as_result=as_result)
    agent = Agent(name="billing", model=ScriptedModel("4472", crash=False), tools=tools)
    return str((await Runner.run(agent, "charge order 4472")).final_output)


async def test_an_outage_is_a_retryable_failure_the_model_is_told_and_the_rerun_charges_once() -> (
    None
):
    ledger, service = InMemoryLedger(), start("naive")
    url = service.url
    service.stop()  # the payments service is down
    answer = await _run_http(LedgerRun(ledger.client(), "run-8"), url)
    assert "An error occurred while running the tool" in answer  # the SDK's message, as before
    op = operation_id("run-8", "charge#1")
    state = ledger.state(op)
    assert state is not None
    assert (state.status.value.lower(), state.retryable) == ("failed", True)
    assert "ConnectError" in (state.error or "")

    back = start("naive", port=int(url.rsplit(":", 1)[1]))  # it recovers
    try:
        answer = await _run_http(LedgerRun(ledger.client(), "run-8"), url)
    finally:
        back.stop()
    assert answer == "charged: fx-1"
    assert sum(back.ledger.applied.values()) == 1
    execution = ledger.execution(op)
    assert execution is not None
    assert (execution.status, execution.result) == ("completed", "fx-1")


async def test_a_failure_for_good_answers_the_rerun_with_the_sdks_message_too() -> None:
    ledger = InMemoryLedger()

    @function_tool
    def charge(order_id: str, amount_cents: int) -> str:
        """Charge the customer for an order."""
        raise ValueError("card declined")

    for _ in ("run", "rerun"):
        agent = Agent(
            name="billing", model=ScriptedModel("4472", crash=False),
            tools=ledger_tools([charge], LedgerRun(ledger.client(), "run-8")),
        )  # fmt: skip
        answer = str((await Runner.run(agent, "charge")).final_output)
        assert "An error occurred while running the tool" in answer  # on the rerun too
    execution = ledger.execution(operation_id("run-8", "charge#1"))
    assert execution is not None
    assert (execution.status, execution.error) == ("failed", "ValueError: card declined")


async def test_error_message_as_result_records_the_sdks_message_as_the_result() -> None:
    ledger, service = InMemoryLedger(), start("naive")
    url = service.url
    service.stop()
    await _run_http(LedgerRun(ledger.client(), "run-8"), url, as_result=True)
    execution = ledger.execution(operation_id("run-8", "charge#1"))
    assert execution is not None
    assert execution.status == "completed"
    assert "An error occurred while running the tool" in str(execution.result)


async def test_mcp_function_tools_send_the_key_through_the_meta_resolver() -> None:
    ledger = InMemoryLedger()
    server = MCPServerStdio(
        {"command": sys.executable, "args": [meta_server.__file__]},
        tool_meta_resolver=ledger_meta_resolver,
        client_session_timeout_seconds=60,  # a subprocess importing oncelog, on a loaded machine
    )
    async with server:
        listed = await server.list_tools()
        mcp_tools = [MCPUtil.to_function_tool(t, server, False) for t in listed]
        (charge,) = [t for t in mcp_tools if t.name == "charge"]
        (lookup,) = [t for t in mcp_tools if t.name == "lookup"]
        assert lookup.mcp_annotations is not None
        run = LedgerRun(ledger.client(), "run-6")
        tools = ledger_tools([charge, lookup], run)
        agent = Agent(name="billing", model=ScriptedModel("7", crash=False), tools=tools)
        await Runner.run(agent, "charge order 7")
        args = '{"order_id": "7"}'
        call = AgentsToolContext(None, tool_name="lookup", tool_call_id="c2", tool_arguments=args)
        await cast(FunctionTool, tools[1]).on_invoke_tool(call, args)
    execution = ledger.execution(operation_id("run-6", "charge#1"))
    assert execution is not None
    assert execution.idempotency_key in str(execution.result)  # the server saw the key
    states = [ledger.state(operation_id("run-6", k)) for k in ("charge#1", "lookup#1")]
    # lookup is read only on the server: its annotation makes it pure.
    assert [None if s is None else s.effect for s in states] == [Effect.EXTERNAL, Effect.PURE]
