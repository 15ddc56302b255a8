"""A 20-superstep LangGraph agent with two tools through the ledger, on any saver.

The model is scripted (no LLM: the figure is the saver's and the ledger's cost): it calls
``lookup`` (pure) and ``record`` (external) in turn until nine tools have answered, then
answers. Each tool runs through :func:`oncelog.integrations.langchain.ledger_tools` with
the saver as its checkpointer (the branch tree the adapter keeps reads it). The saver is
wrapped so that its calls are counted.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from oncelog.integrations import LedgerRun, ToolPolicy
from oncelog.integrations.langchain import ledger_tools
from oncelog.producer.sync_client import SyncLedgerClient

#: Tool answers before the model answers: with the input step, 20 supersteps.
TOOL_CALLS = 9
COUNTED = ("put", "put_writes", "get_tuple", "list", "checkpoint_heads")


def _tools(recorded: list[str]) -> list[BaseTool]:
    @tool
    def lookup(topic: str) -> str:
        """Look a topic up (no side effect)."""
        return f"facts about {topic}"

    @tool
    def record(note: str) -> str:
        """Record a note downstream (a side effect)."""
        recorded.append(note)
        return f"recorded #{len(recorded)}"

    return [lookup, record]


def _model(messages: Sequence[BaseMessage]) -> AIMessage:
    answered = sum(isinstance(m, ToolMessage) for m in messages)
    if answered >= TOOL_CALLS:
        return AIMessage("done")
    name = "lookup" if answered % 2 == 0 else "record"
    args = {"topic": f"t{answered}"} if name == "lookup" else {"note": f"n{answered}"}
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"c{answered}"}])


def _counted(saver: BaseCheckpointSaver[Any], calls: dict[str, int]) -> None:
    """Count the saver's calls (instance attributes shadow the methods)."""
    for name in COUNTED:
        method = getattr(saver, name, None)
        if method is None:
            continue

        def wrapped(*a: Any, _m: Callable[..., Any] = method, _n: str = name, **k: Any) -> Any:
            calls[_n] = calls.get(_n, 0) + 1
            return _m(*a, **k)

        setattr(saver, name, wrapped)


def run_agent(saver: BaseCheckpointSaver[Any], client: SyncLedgerClient) -> dict[str, Any]:
    """One agent run on a fresh thread: wall ms, supersteps, saver calls per superstep."""
    calls: dict[str, int] = {}
    _counted(saver, calls)
    recorded: list[str] = []
    policies = {"lookup": ToolPolicy(effect="pure"), "record": ToolPolicy(downstream_dedupes=True)}
    run = LedgerRun(client, policies=policies)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [_model(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(ledger_tools(_tools(recorded), run, checkpointer=saver)))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    graph.add_edge("agent", END)
    compiled = graph.compile(checkpointer=saver)
    config = RunnableConfig(configurable={"thread_id": f"agent-{uuid.uuid4().hex}"})
    began = time.perf_counter()
    compiled.invoke({"messages": [HumanMessage("go")]}, config)
    wall_ms = (time.perf_counter() - began) * 1000
    steps = calls.get("put", 0)
    for name in COUNTED:  # the next run counts afresh
        saver.__dict__.pop(name, None)
    return {
        "agent_wall_ms": round(wall_ms, 1),
        "agent_supersteps": steps,
        "agent_calls_per_superstep": {
            k: round(v / max(1, steps), 2) for k, v in sorted(calls.items())
        },
    }


__all__ = ["TOOL_CALLS", "run_agent"]
