"""A LangGraph agent with charge (external), draft_email (pure) and send_email (external),
its counting downstream, and the time-travel moves of the fork scenarios (issue 29)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from oncelog.integrations import LedgerRun, ToolPolicy, current_call
from oncelog.integrations.langchain import ledger_tools

THREAD = "thread-29"
ORDER = "order 4471 amount 4200"


@dataclass
class Downstream:
    """Applies every charge and email it is sent, never deduplicating: the effects counted."""

    charges: list[int] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    crash_after_charge: bool = False
    # The idempotency key each charge came with, and its answer: what reconcile asks.
    charged_keys: dict[str, dict[str, Any]] = field(default_factory=dict)

    def find_charge(self, previous: Any, ctx: Any) -> dict[str, Any] | None:
        """The reconcile hook: the charge this idempotency key made, if any."""
        return self.charged_keys.get(ctx.idempotency_key)

    def tools(self) -> list[BaseTool]:
        """The agent's three tools on this downstream."""

        @tool
        def charge(order_id: str, amount_cents: int) -> dict[str, Any]:
            """Charge the customer for an order."""
            self.charges.append(amount_cents)
            answer = {"charge_id": f"ch_{len(self.charges)}", "amount_cents": amount_cents}
            self.charged_keys[current_call().idempotency_key] = answer
            if self.crash_after_charge:  # the process dies before the ledger hears back
                self.crash_after_charge = False
                raise Died("the process dies after the charge")
            return answer

        @tool
        def draft_email(order_id: str, amount_cents: int, signature: str) -> str:
            """Draft the receipt email (no side effect)."""
            return f"Order {order_id}: {amount_cents} cents charged. {signature}"

        @tool
        def send_email(body: str) -> str:
            """Send an email to the customer."""
            self.emails.append(body)
            return f"sent #{len(self.emails)}"

        return [charge, draft_email, send_email]


class Died(BaseException):
    """The process dying inside a tool, after its effect."""


def _next_move(messages: Sequence[BaseMessage]) -> AIMessage:
    """The scripted model: charge, then draft, then send, then answer. The order, amount and
    signature come from the human messages (the last one said wins); a human word after the
    charge makes it draft again."""
    said = " ".join(str(m.content) for m in messages if isinstance(m, HumanMessage))
    order = re.findall(r"order (\d+)", said)[-1]
    amount = int(re.findall(r"amount (\d+)", said)[-1])
    signature = (re.findall(r"sign (\w+)", said) or ["Shop"])[-1]
    last, n = messages[-1], len(messages)
    charged = any(isinstance(m, ToolMessage) and m.name == "charge" for m in messages)
    if isinstance(last, HumanMessage) and not charged:
        return _call("charge", {"order_id": order, "amount_cents": amount}, n)
    if isinstance(last, HumanMessage) or (isinstance(last, ToolMessage) and last.name == "charge"):
        args = {"order_id": order, "amount_cents": amount, "signature": signature}
        return _call("draft_email", args, n)
    if isinstance(last, ToolMessage) and last.name == "draft_email":
        return _call("send_email", {"body": str(last.content)}, n)
    return AIMessage("done")


def _call(name: str, args: dict[str, Any], n: int) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call-{n}-{name}"}])


def agent_graph(run: LedgerRun, downstream: Downstream, saver: BaseCheckpointSaver[Any]) -> Any:
    """The agent as one process builds it: its tools through the ledger, the shared saver."""

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [_next_move(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(ledger_tools(downstream.tools(), run, checkpointer=saver)))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    graph.add_edge("agent", END)
    return graph.compile(checkpointer=saver)


def policies(downstream: Downstream, *, per_branch: bool = False) -> dict[str, ToolPolicy]:
    """Charge (reconciled with the downstream) and send are external; the draft is pure."""
    charge = ToolPolicy(reconcile=downstream.find_charge, lease_seconds=2, per_branch=per_branch)
    return {
        "charge": charge,
        "draft_email": ToolPolicy(effect="pure"),
        "send_email": ToolPolicy(downstream_dedupes=True),
    }


def thread() -> dict[str, Any]:
    return {"configurable": {"thread_id": THREAD}}


def checkpoint_where(graph: Any, *, last_tool: str | None, next_node: str) -> Any:
    """The checkpoint of the first run whose next node is ``next_node`` and whose last
    message is ``last_tool``'s answer (None: the human's order)."""
    history = list(graph.get_state_history(thread()))
    for snap in reversed(history):  # oldest first
        messages = snap.values.get("messages", [])
        if snap.next != (next_node,) or not messages:
            continue
        last = messages[-1]
        if last_tool is None and isinstance(last, HumanMessage):
            return snap
        if isinstance(last, ToolMessage) and last.name == last_tool:
            return snap
    raise AssertionError(f"no checkpoint after {last_tool} before {next_node}")


__all__ = [
    "ORDER",
    "THREAD",
    "Died",
    "Downstream",
    "agent_graph",
    "checkpoint_where",
    "policies",
    "thread",
]
