"""One agent per framework that refunds through the ledger, over a limit only with approval.

Shared by the worker process that pauses on the approval and is SIGKILLed there
(``approval_agent_worker.py``) and the test that decides and resumes in a new process
(``test_approval_agents.py``). Each framework pauses its own way (oncelog.integrations.approvals):
``pause`` runs the agent until it pauses and saves what the framework needs to resume to
``state``; ``resume`` resumes from it, and returns the agent's answer. The refund's effect is
a line with its params appended to ``effects``.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

from oncelog.integrations import LedgerRun, ToolPolicy
from oncelog.producer.approval_rule import RequireApproval

LIMIT_CENTS: Final = 10_000
ORDER_ID: Final = "4471"


def refund_policy() -> ToolPolicy:
    """Refunds over the limit ask a person first (the call pauses at once)."""
    return ToolPolicy(
        approval=RequireApproval(when=lambda p: p["amount_cents"] > LIMIT_CENTS),
        downstream_dedupes=True,
    )


def refund_effect(effects: Path, order_id: str, amount_cents: int) -> dict[str, Any]:
    """The refund's body: one line per refund that ran."""
    with effects.open("a") as out:
        out.write(json.dumps({"order_id": order_id, "amount_cents": amount_cents}) + "\n")
    return {"refunded": amount_cents, "order_id": order_id}


# --- Pydantic AI ------------------------------------------------------------------------------


def _pydantic_agent(run: LedgerRun, effects: Path, amount: int) -> Any:
    from pydantic_ai import Agent, DeferredToolRequests  # noqa: PLC0415
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
            args = {"order_id": ORDER_ID, "amount_cents": amount}
            return ModelResponse(parts=[ToolCallPart("refund", args, tool_call_id="call-1")])
        return ModelResponse(parts=[TextPart(json.dumps(returned[-1].content))])

    def refund(order_id: str, amount_cents: int) -> dict[str, Any]:
        """Refund the customer for an order."""
        return refund_effect(effects, order_id, amount_cents)

    return Agent(
        FunctionModel(respond),
        output_type=[str, DeferredToolRequests],
        toolsets=[ledger_toolset([refund], run)],
    )


async def pydantic_pause(run: LedgerRun, effects: Path, amount: int, state: Path) -> dict[str, Any]:
    """Run until the refund is deferred for approval; keep the messages and the requests."""
    from pydantic import TypeAdapter  # noqa: PLC0415
    from pydantic_ai import DeferredToolRequests  # noqa: PLC0415

    result = await _pydantic_agent(run, effects, amount).run("refund order 4471")
    requests = result.output
    assert isinstance(requests, DeferredToolRequests), requests
    state.write_text(json.dumps({
        "messages": json.loads(result.all_messages_json()),
        "requests": TypeAdapter(DeferredToolRequests).dump_python(requests, mode="json"),
    }))  # fmt: skip
    pending: dict[str, Any] = requests.metadata[requests.approvals[0].tool_call_id]
    return pending


async def pydantic_resume(run: LedgerRun, effects: Path, amount: int, state: Path) -> str:
    """Resume the deferred run: the ledger's decision decides."""
    from pydantic import TypeAdapter  # noqa: PLC0415
    from pydantic_ai import DeferredToolRequests  # noqa: PLC0415
    from pydantic_ai.messages import ModelMessagesTypeAdapter  # noqa: PLC0415

    from oncelog.integrations.pydantic_ai import resume_approvals  # noqa: PLC0415

    saved = json.loads(state.read_text())
    messages = ModelMessagesTypeAdapter.validate_python(saved["messages"])
    requests = TypeAdapter(DeferredToolRequests).validate_python(saved["requests"])
    result = await _pydantic_agent(run, effects, amount).run(
        message_history=messages, deferred_tool_results=resume_approvals(requests)
    )
    return str(result.output)


# --- OpenAI Agents ----------------------------------------------------------------------------


def _openai_agent(run: LedgerRun, effects: Path, amount: int) -> Any:
    from agents import Agent, function_tool, set_tracing_disabled  # noqa: PLC0415

    from oncelog.integrations.openai_agents import ledger_tools  # noqa: PLC0415
    from tests.integration.frameworks.scripted import ScriptedModel  # noqa: PLC0415

    set_tracing_disabled(True)  # no trace exporter: nothing leaves the machine

    @function_tool(name_override="refund")
    def refund(order_id: str, amount_cents: int) -> dict[str, Any]:
        """Refund the customer for an order."""
        return refund_effect(effects, order_id, amount_cents)

    model = ScriptedModel(ORDER_ID, crash=False, tool="refund", amount_cents=amount)
    return Agent(name="billing", model=model, tools=ledger_tools([refund], run))


async def openai_pause(run: LedgerRun, effects: Path, amount: int, state: Path) -> dict[str, Any]:
    """``Runner.run`` until the refund interrupts it; keep the run's state."""
    from agents import Runner  # noqa: PLC0415

    result = await Runner.run(_openai_agent(run, effects, amount), "refund order 4471")
    names = [getattr(i.raw_item, "name", None) for i in result.interruptions]
    assert names == ["refund"], result.final_output
    state.write_text(result.to_state().to_string())
    return await _intent(run, "refund#1")


async def openai_resume(run: LedgerRun, effects: Path, amount: int, state: Path) -> str:
    """Approve the interruptions in the framework: the ledger's decision decides."""
    from agents import Runner, RunState  # noqa: PLC0415

    agent = _openai_agent(run, effects, amount)
    paused = await RunState.from_string(agent, state.read_text())
    for item in paused.get_interruptions():
        paused.approve(item)
    return str((await Runner.run(agent, paused)).final_output)


async def _intent(run: LedgerRun, key: str) -> dict[str, Any]:
    """The intent as the ledger recorded it (what a person sees)."""
    from oncelog.identity.ids import operation_id  # noqa: PLC0415
    from oncelog.producer.client import LedgerClient  # noqa: PLC0415

    assert isinstance(run.client, LedgerClient)
    channel = run.channel()
    seen = await run.client.get_execution(
        operation_id(channel, key), channel_id=channel, key_name=key
    )
    assert seen is not None
    assert seen.status == "awaiting_approval", seen
    return {"approval_pending": True, "key_name": key, "params": seen.params,
            "request_hash": seen.request_hash}  # fmt: skip


# --- LangGraph --------------------------------------------------------------------------------


def _langgraph_graph(run: LedgerRun, effects: Path, amount: int, saver: Any) -> Any:
    from langchain_core.language_models.fake_chat_models import (  # noqa: PLC0415
        FakeMessagesListChatModel,
    )
    from langchain_core.messages import AIMessage  # noqa: PLC0415
    from langchain_core.tools import tool  # noqa: PLC0415
    from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: PLC0415
    from langgraph.prebuilt import ToolNode, tools_condition  # noqa: PLC0415

    from oncelog.integrations.langchain import ledger_tools  # noqa: PLC0415

    @tool("refund")
    def refund(order_id: str, amount_cents: int) -> dict[str, Any]:
        """Refund the customer for an order."""
        return refund_effect(effects, order_id, amount_cents)

    args = {"order_id": ORDER_ID, "amount_cents": amount}
    asks = AIMessage("", tool_calls=[{"name": "refund", "args": args, "id": "call-1"}])
    model = FakeMessagesListChatModel(responses=[asks, AIMessage("done")])

    def agent(state: MessagesState) -> dict[str, Any]:
        if state["messages"][-1].type == "tool":
            return {"messages": [AIMessage(str(state["messages"][-1].content))]}
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(ledger_tools([refund], run)))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    graph.add_edge("agent", END)
    return graph.compile(checkpointer=saver)


def _saver() -> Any:
    from oncelog.integrations.langgraph import OncelogSaver  # noqa: PLC0415
    from oncelog.settings import Settings  # noqa: PLC0415

    return OncelogSaver(Settings())


async def langgraph_pause(
    run: LedgerRun, effects: Path, amount: int, state: Path
) -> dict[str, Any]:
    """Invoke the graph (checkpointed on the ledger) until the refund interrupts it."""
    from langchain_core.messages import HumanMessage  # noqa: PLC0415

    config = {"configurable": {"thread_id": run.channel()}}
    with _saver() as saver:
        graph = _langgraph_graph(run, effects, amount, saver)
        out = await graph.ainvoke({"messages": [HumanMessage("refund order 4471")]}, config)
    (interrupted,) = out["__interrupt__"]
    pending: dict[str, Any] = interrupted.value
    state.write_text(json.dumps(config))
    return pending


async def langgraph_resume(run: LedgerRun, effects: Path, amount: int, state: Path) -> str:
    """Resume the thread with ``Command(resume=...)``: the ledger's decision decides."""
    from langgraph.types import Command  # noqa: PLC0415

    config = json.loads(state.read_text())
    with _saver() as saver:
        graph = _langgraph_graph(run, effects, amount, saver)
        out = await graph.ainvoke(Command(resume="decided"), config)
    return str(out["messages"][-1].content)


Pause = Callable[[LedgerRun, Path, int, Path], Awaitable[dict[str, Any]]]
Resume = Callable[[LedgerRun, Path, int, Path], Awaitable[str]]
AGENTS: Final[dict[str, tuple[Pause, Resume]]] = {
    "pydantic_ai": (pydantic_pause, pydantic_resume),
    "openai_agents": (openai_pause, openai_resume),
    "langgraph": (langgraph_pause, langgraph_resume),
}
