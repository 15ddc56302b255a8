"""Inside an agent framework's tool call, the ledger's spans are children of the
framework's span: Pydantic AI's own instrumentation, and LangChain's through
OpenInference's instrumentor (LangChain emits no OpenTelemetry by itself)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.test import TestModel

from oncelog.integrations import LedgerRun
from oncelog.integrations.langchain import ledger_tools
from oncelog.integrations.pydantic_ai import ledger_toolset
from oncelog.testing import InMemoryLedger
from tests.integration.tracing.conftest import one


def _ledger_spans_under(finished: list[ReadableSpan], framework_span: ReadableSpan) -> None:
    """The run_tool span is the framework span's child; claim, tool, complete are its."""
    run = one(finished, "oncelog.run_tool")
    assert run.parent is not None
    assert run.parent.span_id == framework_span.context.span_id
    assert run.context.trace_id == framework_span.context.trace_id
    assert framework_span.parent is not None  # under the framework's run, not a root
    children = {s.name for s in finished if s.parent and s.parent.span_id == run.context.span_id}
    assert children == {"oncelog.claim", "oncelog.tool", "oncelog.complete"}


async def test_pydantic_ai_tool_spans_parent_the_ledgers(
    spans: InMemorySpanExporter, tracer_provider: TracerProvider
) -> None:
    ledger = InMemoryLedger()

    def charge(order_id: str) -> str:
        """Charge an order."""
        return f"charged {order_id}"

    run = LedgerRun(ledger.client(), "run-1")
    agent = Agent(TestModel(), toolsets=[ledger_toolset([charge], run)])
    agent.instrument = InstrumentationSettings(tracer_provider=tracer_provider)
    await agent.run("charge order 1")
    finished = list(spans.get_finished_spans())
    [framework] = [s for s in finished if (s.attributes or {}).get("gen_ai.tool.name") == "charge"]
    _ledger_spans_under(finished, framework)


@pytest.fixture
def langchain_instrumented(tracer_provider: TracerProvider) -> Iterator[None]:
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=tracer_provider)
    try:
        yield
    finally:
        instrumentor.uninstrument()


def _graph(run: LedgerRun) -> Any:
    @tool
    def charge(order_id: str) -> str:
        """Charge an order."""
        return f"charged {order_id}"

    call = {"name": "charge", "args": {"order_id": "1"}, "id": "call-1"}
    model = FakeMessagesListChatModel(responses=[AIMessage("", tool_calls=[call])])
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode(ledger_tools([charge], run)))
    graph.add_edge(START, "agent")
    graph.add_edge("agent", "tools")
    return graph.compile()


@pytest.mark.usefixtures("langchain_instrumented")
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_langchain_tool_spans_parent_the_ledgers(spans: InMemorySpanExporter, mode: str) -> None:
    ledger, go = InMemoryLedger(), {"messages": [HumanMessage("go")]}
    if mode == "sync":
        _graph(LedgerRun(ledger.sync_client(), "thread-1")).invoke(go)
    else:
        asyncio.run(_graph(LedgerRun(ledger.client(), "thread-1")).ainvoke(go))
    finished = list(spans.get_finished_spans())
    run = one(finished, "oncelog.run_tool")
    assert run.parent is not None
    [framework] = [s for s in finished if s.context.span_id == run.parent.span_id]
    assert (framework.attributes or {}).get("openinference.span.kind") == "TOOL"
    assert framework.name == "charge"
    _ledger_spans_under(finished, framework)
