"""LangChain tools in a LangGraph agent: a crash after the effect, a rerun that replays."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, ToolException, tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from oncelog.errors import ConflictError
from oncelog.identity.ids import operation_id
from oncelog.integrations import LedgerRun, ToolPolicy
from oncelog.integrations.langchain import ledger_tools
from oncelog.schemas.models import Effect
from oncelog.testing import InMemoryLedger
from tests.integration.contract import Backend
from tests.integration.frameworks.downstream import Crash, Payments


def _charge_call(order_id: str) -> AIMessage:
    args = {"order_id": order_id, "amount_cents": 4200}
    return AIMessage("", tool_calls=[{"name": "charge", "args": args, "id": f"call-{order_id}"}])


def _agent(tools: list[BaseTool], script: list[BaseMessage], crash: bool) -> Any:
    model = FakeMessagesListChatModel(responses=script)

    def agent(state: MessagesState) -> dict[str, Any]:
        if crash and isinstance(state["messages"][-1], ToolMessage):
            raise Crash("the process dies before the model's next turn")
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    graph.add_edge("agent", END)
    return graph.compile()


def _payment_tools(payments: Payments) -> list[BaseTool]:
    @tool
    def charge(order_id: str, amount_cents: int) -> dict[str, Any]:
        """Charge the customer for an order."""
        return payments.charge(order_id, amount_cents)

    @tool
    def lookup(order_id: str) -> str:
        """Look an order up (no side effect)."""
        return f"order {order_id}"

    return [charge, lookup]


def _crash_then_rerun_sync(backend: Backend, payments: Payments) -> dict[str, Any]:
    script = [_charge_call("4471"), AIMessage("charged")]
    first = LedgerRun(backend.sync_client(), "thread-7")
    with pytest.raises(Crash):
        _agent(ledger_tools(_payment_tools(payments), first), list(script), crash=True).invoke(
            {"messages": [HumanMessage("charge order 4471")]}
        )
    rerun = LedgerRun(backend.sync_client(), "thread-7")
    graph = _agent(ledger_tools(_payment_tools(payments), rerun), list(script), crash=False)
    out: dict[str, Any] = graph.invoke({"messages": [HumanMessage("charge order 4471")]})
    return out


def test_a_rerun_after_a_crash_replays_the_charge(ledger_backend: Backend) -> None:
    payments = Payments()
    out = _crash_then_rerun_sync(ledger_backend, payments)
    assert len(payments.charges) == 1
    tool_message = out["messages"][2]
    assert isinstance(tool_message, ToolMessage)
    assert '"charge_id": "ch_1"' in str(tool_message.content)
    assert out["messages"][-1].content == "charged"


async def test_the_async_graph_takes_langgraphs_thread_id_as_the_channel() -> None:
    ledger, payments = InMemoryLedger(), Payments()
    script = [_charge_call("4471"), AIMessage("charged")]
    config: Any = {"configurable": {"thread_id": "thread-9"}}
    first = _agent(
        ledger_tools(_payment_tools(payments), LedgerRun(ledger.client())), [*script], True
    )
    with pytest.raises(Crash):
        await first.ainvoke({"messages": [HumanMessage("charge")]}, config)
    assert len(payments.charges) == 1  # the effect fired before the crash
    rerun = _agent(
        ledger_tools(_payment_tools(payments), LedgerRun(ledger.client())), [*script], False
    )
    out = await rerun.ainvoke({"messages": [HumanMessage("charge")]}, config)
    assert out["messages"][-1].content == "charged"
    assert len(payments.charges) == 1
    execution = ledger.execution(operation_id("thread-9", "charge#1"))
    assert execution is not None
    assert execution.status == "completed"
    assert payments.charges[0]["idempotency_key"] == execution.idempotency_key


def test_a_rerun_whose_model_asks_other_arguments_raises_a_conflict() -> None:
    ledger, payments = InMemoryLedger(), Payments()
    first = LedgerRun(ledger.sync_client(), "thread-7")
    graph = _agent(ledger_tools(_payment_tools(payments), first), [_charge_call("4471")], True)
    with pytest.raises(Crash):
        graph.invoke({"messages": [HumanMessage("charge")]})
    rerun = LedgerRun(ledger.sync_client(), "thread-7")
    graph = _agent(ledger_tools(_payment_tools(payments), rerun), [_charge_call("9999")], False)
    with pytest.raises(ConflictError) as info:
        graph.invoke({"messages": [HumanMessage("charge")]})
    assert "'charge#1'" in "\n".join(info.value.__notes__)
    assert len(payments.charges) == 1


def test_effects_are_declared_per_tool_external_by_default() -> None:
    ledger = InMemoryLedger()
    run = LedgerRun(ledger.sync_client(), "run-1", policies={"lookup": ToolPolicy(effect="pure")})
    charge, lookup = ledger_tools(_payment_tools(Payments()), run)
    assert lookup.invoke({"order_id": "1"}) == "order 1"
    charge.invoke({"order_id": "1", "amount_cents": 1})
    states = [ledger.state(operation_id("run-1", key)) for key in ("lookup#1", "charge#1")]
    assert [None if s is None else s.effect for s in states] == [Effect.PURE, Effect.EXTERNAL]


def _declined_charge() -> BaseTool:
    @tool
    def charge(order_id: str, amount_cents: int) -> str:
        """Charge the customer for an order."""
        raise ToolException("card declined")

    charge.handle_tool_error = True  # LangChain answers the model with the exception's text
    return charge


def test_a_handled_tool_exception_is_recorded_as_a_failure_and_still_told_to_the_model() -> None:
    ledger, charge = InMemoryLedger(), _declined_charge()
    for _ in ("run", "rerun"):
        run = LedgerRun(ledger.sync_client(), "thread-8")
        graph = _agent(ledger_tools([charge], run), [_charge_call("4472"), AIMessage("no")], False)
        out = graph.invoke({"messages": [HumanMessage("charge")]})
        told = out["messages"][2]
        assert isinstance(told, ToolMessage)
        assert "card declined" in str(told.content)  # LangChain's message, made outside the ledger
    execution = ledger.execution(operation_id("thread-8", "charge#1"))
    assert execution is not None
    assert (execution.status, execution.error) == ("failed", "ToolException: card declined")


def test_error_message_as_result_records_langchains_message() -> None:
    ledger, charge = InMemoryLedger(), _declined_charge()
    run = LedgerRun(ledger.sync_client(), "thread-8")
    (wrapped,) = ledger_tools([charge], run, error_message_as_result=True)
    assert wrapped.invoke({"order_id": "1", "amount_cents": 1}) == "card declined"
    execution = ledger.execution(operation_id("thread-8", "charge#1"))
    assert execution is not None
    assert (execution.status, execution.result) == ("completed", "card declined")
