"""What naming a tool call's branch costs with ``OncelogSaver``: a 20-step agent whose tools
run through the ledger, and the saver's reads counted per tool call (docs/performance.md).

The branch tree is kept per thread, so each tool call reads only the checkpoints newer
than the newest it knows: one heads-only request, a handful of rows, and no checkpoint
listing (each page of which loads every item with its channel values).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from oncelog.integrations import LedgerRun, ToolPolicy
from oncelog.integrations.langchain import ledger_tools
from oncelog.integrations.langgraph import OncelogSaver
from oncelog.producer.sync_client import SyncLedgerClient
from tests.served import Served

pytestmark = pytest.mark.kafka

STEPS = 20


@dataclass
class Reads:
    """The saver's GETs by route, and the rows they answered, while tools ran."""

    calls: Counter[str] = field(default_factory=Counter)
    rows: Counter[str] = field(default_factory=Counter)
    methods: Counter[str] = field(default_factory=Counter)
    tool_calls: int = 0


def counting(saver: OncelogSaver, reads: Reads) -> None:
    """Count the saver's reads (its methods, and each GET by route with its rows)."""
    for name in ("list", "get_tuple", "checkpoint_heads"):
        method = getattr(saver, name, None)
        if method is not None:
            setattr(saver, name, _counted(method, name, reads.methods))
    reader = saver._reader
    get = reader.get

    def counted(path: str, params: Mapping[str, Any]) -> Any:
        answer = get(path, params)
        route = "/".join(path.split("/")[:3])
        reads.calls[route] += 1
        reads.rows[route] += len(answer.get("items", ()))
        return answer

    reader.get = counted  # type: ignore[method-assign]


def _counted(method: Callable[..., Any], name: str, counts: Counter[str]) -> Any:
    def counted(*args: Any, **kwargs: Any) -> Any:
        counts[name] += 1
        return method(*args, **kwargs)

    return counted


def step_tool(reads: Reads) -> BaseTool:
    @tool
    def step(n: int) -> str:
        """One step of the agent's work."""
        reads.tool_calls += 1
        return f"step {n} done"

    return step


def model(state: MessagesState) -> dict[str, list[BaseMessage]]:
    """A scripted agent: one tool call a turn, STEPS of them, then done."""
    done = sum(isinstance(m, ToolMessage) for m in state["messages"])
    if done == STEPS:
        return {"messages": [AIMessage("done")]}
    call = {"name": "step", "args": {"n": done + 1}, "id": f"call-{done + 1}"}
    return {"messages": [AIMessage("", tool_calls=[call])]}


def agent(run: LedgerRun, saver: OncelogSaver, reads: Reads) -> Any:
    tools = ledger_tools([step_tool(reads)], run, checkpointer=saver)
    graph = StateGraph(MessagesState)
    graph.add_node("agent", model)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=saver)


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_each_tool_call_reads_only_the_new_checkpoints_heads(
    served: Served, make_saver: Callable[..., OncelogSaver], durability: str
) -> None:
    reads = Reads()
    saver = make_saver()
    policy = {"step": ToolPolicy(effect="pure")}
    with SyncLedgerClient(served.settings) as client:
        graph = agent(LedgerRun(client, policies=policy), saver, reads)
        thread = {"configurable": {"thread_id": f"cost-{durability}"}, "recursion_limit": 100}
        counting(saver, reads)
        out = graph.invoke({"messages": [HumanMessage("go")]}, thread, durability=durability)
    assert out["messages"][-1].content == "done"
    assert reads.tool_calls == STEPS
    found = (dict(reads.methods), dict(reads.calls), dict(reads.rows))
    print(f"\n{durability}, {STEPS} tool calls: saver calls, GETs, rows: {found}")
    assert reads.methods["list"] == 0  # no listing of whole checkpoints
    # Each checkpoint's head is read once: the ones since the tool call before.
    assert reads.rows["/v1/checkpoint-heads"] <= 2 * STEPS + 1
    if durability == "sync":  # saved before the tools run: no read waits for it
        # At most one GET a tool call: the saver's memory of its own puts answers most.
        assert reads.calls["/v1/checkpoint-heads"] <= STEPS
