"""One agent per framework that charges through a payments service that ignores keys.

Shared by the worker process that dies in the crash window (``crash_worker.py``) and the test
that reruns the agent after it (``test_crash_window.py``). The service is
:mod:`drills.sample.downstream` in ``naive`` mode: it applies every charge it is sent, keys or
not, and answers ``GET /applied?key=...`` with the first response for a key, which is what a
reconcile hook asks. The tool SIGKILLs its own process right after the charge when
``DIE_AFTER_EFFECT`` is set: after the effect, before the ledger records the completion.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Awaitable, Callable
from typing import Any, Final

import httpx

from oncelog.integrations import LedgerRun, ToolPolicy, current_call
from oncelog.producer.client import LedgerClient
from oncelog.producer.executor import ToolContext
from oncelog.schemas.models import PreviousAttempt

DIE_AFTER_EFFECT: Final = "ONCELOG_TEST_DIE_AFTER_EFFECT"
LEASE_S: Final = 2.0
ORDER_ID: Final = "4472"
ORDER: Final[dict[str, Any]] = {"order_id": ORDER_ID, "amount_cents": 4200}
FRAMEWORKS: Final = ("langgraph", "openai_agents", "pydantic_ai")

Agent = Callable[[LedgerRun, str], Awaitable[str]]


def die_here_if_asked() -> None:
    """SIGKILL this process when the crash test asked for it: no finally, no completion."""
    if os.environ.get(DIE_AFTER_EFFECT):
        os.kill(os.getpid(), signal.SIGKILL)


def charge(url: str, order_id: str, amount_cents: int) -> dict[str, Any]:
    """The tool's body: one charge, the ledger's idempotency key sent along (and ignored)."""
    payload = {"op": f"charge:{order_id}", "payload": {"amount_cents": amount_cents}}
    headers = {"Idempotency-Key": current_call().idempotency_key}
    answer = httpx.post(f"{url}/effect", json=payload, headers=headers, timeout=10)
    answer.raise_for_status()
    die_here_if_asked()
    return {"charge_id": answer.json()["effect_id"], "order_id": order_id}


def reconcile_with(url: str) -> Callable[[PreviousAttempt, ToolContext], Awaitable[Any]]:
    """A reconcile hook: ask the service whether it saw this call's key; its charge if so."""

    async def reconcile(previous: PreviousAttempt, ctx: ToolContext) -> Any:
        async with httpx.AsyncClient(timeout=10) as http:
            seen = (await http.get(f"{url}/applied", params={"key": ctx.idempotency_key})).json()
        if not seen["applied"]:
            return None  # the service never saw it: the tool runs
        return {"charge_id": seen["response"]["effect_id"], "order_id": ctx.params["order_id"]}

    return reconcile


def ledger_run(client: LedgerClient, channel: str, url: str, *, reconcile: bool) -> LedgerRun:
    """The run's ledger: a short lease, a rerun that waits it out, the hook if asked."""
    policy = ToolPolicy(
        reconcile=reconcile_with(url) if reconcile else None,
        lease_seconds=LEASE_S,
        on_in_progress="wait",
    )
    return LedgerRun(client, channel, policies={"charge": policy})


# --- LangGraph ------------------------------------------------------------------------------


async def langgraph_agent(run: LedgerRun, url: str) -> str:
    """A LangGraph agent (a fake chat model) that charges once, then answers."""
    from langchain_core.language_models.fake_chat_models import (  # noqa: PLC0415
        FakeMessagesListChatModel,
    )
    from langchain_core.messages import AIMessage, HumanMessage  # noqa: PLC0415
    from langchain_core.tools import tool  # noqa: PLC0415
    from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: PLC0415
    from langgraph.prebuilt import ToolNode, tools_condition  # noqa: PLC0415

    from oncelog.integrations.langchain import ledger_tools  # noqa: PLC0415

    @tool("charge")
    def charge_tool(order_id: str, amount_cents: int) -> dict[str, Any]:
        """Charge the customer for an order."""
        return charge(url, order_id, amount_cents)

    asks = AIMessage("", tool_calls=[{"name": "charge", "args": ORDER, "id": "call-1"}])
    model = FakeMessagesListChatModel(responses=[asks, AIMessage("charged")])

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(ledger_tools([charge_tool], run)))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    graph.add_edge("agent", END)
    out = await graph.compile().ainvoke({"messages": [HumanMessage("charge order 4472")]})
    return str(out["messages"][-2].content)  # the tool's answer, as the model saw it


# --- OpenAI Agents --------------------------------------------------------------------------


async def openai_agents_agent(run: LedgerRun, url: str) -> str:
    """An OpenAI Agents SDK agent, through ``Runner.run``, with a scripted model."""
    from agents import Agent, Runner, function_tool, set_tracing_disabled  # noqa: PLC0415

    from oncelog.integrations.openai_agents import ledger_tools  # noqa: PLC0415
    from tests.integration.frameworks.scripted import ScriptedModel  # noqa: PLC0415

    set_tracing_disabled(True)  # no trace exporter: nothing leaves the machine

    @function_tool(name_override="charge")
    def charge_tool(order_id: str, amount_cents: int) -> dict[str, Any]:
        """Charge the customer for an order."""
        return charge(url, order_id, amount_cents)

    agent = Agent(
        name="billing",
        model=ScriptedModel(ORDER_ID, crash=False),
        tools=ledger_tools([charge_tool], run),
    )
    result = await Runner.run(agent, "charge order 4472")
    return str(result.final_output)


# --- Pydantic AI ----------------------------------------------------------------------------


async def pydantic_ai_agent(run: LedgerRun, url: str) -> str:
    """A Pydantic AI agent, through ``Agent.run``, with a FunctionModel."""
    from pydantic_ai import Agent  # noqa: PLC0415
    from pydantic_ai.messages import (  # noqa: PLC0415
        ModelMessage,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: PLC0415

    from oncelog.integrations.pydantic_ai import ledger_toolset  # noqa: PLC0415

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returned = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if not returned:
            return ModelResponse(parts=[ToolCallPart("charge", dict(ORDER))])
        return ModelResponse(parts=[TextPart(json.dumps(returned[-1].content))])

    def charge_tool(order_id: str, amount_cents: int) -> dict[str, Any]:
        """Charge the customer for an order."""
        return charge(url, order_id, amount_cents)

    charge_tool.__name__ = "charge"
    agent = Agent(FunctionModel(respond), toolsets=[ledger_toolset([charge_tool], run)])
    return (await agent.run("charge order 4472")).output


AGENTS: Final[dict[str, Agent]] = {
    "langgraph": langgraph_agent,
    "openai_agents": openai_agents_agent,
    "pydantic_ai": pydantic_ai_agent,
}
