"""An MCP tool call that needs a person's yes: an error result naming the pending approval."""

from __future__ import annotations

from typing import Any

from mcp import Client
from mcp.server.mcpserver import MCPServer

from oncelog.integrations import LedgerRun, ToolPolicy
from oncelog.integrations.mcp import LedgerMcpTools
from oncelog.producer.approval_rule import RequireApproval
from oncelog.testing import InMemoryLedger

OVER_LIMIT = ToolPolicy(
    approval=RequireApproval(when=lambda p: p["amount_cents"] > 10_000),
    downstream_dedupes=True,
    key=lambda args: f"refund:{args['order_id']}",
)
ORDER = {"order_id": "4471", "amount_cents": 25_000}


def _server(done: list[dict[str, Any]]) -> MCPServer:
    server = MCPServer("billing")

    @server.tool()
    def refund(order_id: str, amount_cents: int) -> dict[str, Any]:
        """Refund the customer for an order."""
        done.append({"order_id": order_id, "amount_cents": amount_cents})
        return {"refunded": amount_cents}

    return server


async def _call(ledger: InMemoryLedger, server: MCPServer) -> Any:
    run = LedgerRun(ledger.client(worker_id="agent"), "run-1", policies={"refund": OVER_LIMIT})
    async with Client(server) as session:
        return await LedgerMcpTools(session, run).call_tool("refund", ORDER)


def _decide(ledger: InMemoryLedger, request_hash: str, approve: bool) -> None:
    ledger.sync_client(worker_id="desk").decide_approval(
        "run-1", "refund:4471", approver="ann", request_hash=request_hash, approve=approve,
        reason="" if approve else "over the balance",
    )  # fmt: skip


async def test_pending_is_an_error_result_then_the_approved_call_runs_once() -> None:
    ledger, done = InMemoryLedger(), list[dict[str, Any]]()
    server = _server(done)
    pending = await _call(ledger, server)
    assert pending.is_error
    approval = pending.structured_content["approval"]
    assert (approval["key_name"], approval["params"]) == ("refund:4471", ORDER)
    assert "awaits a person's approval" in pending.content[0].text
    assert done == []
    _decide(ledger, approval["request_hash"], approve=True)
    answer = await _call(ledger, server)
    assert not answer.is_error
    assert answer.structured_content == {"refunded": 25_000}
    assert done == [ORDER]


async def test_a_denied_call_is_an_error_result_with_the_reason() -> None:
    ledger, done = InMemoryLedger(), list[dict[str, Any]]()
    server = _server(done)
    pending = await _call(ledger, server)
    _decide(ledger, pending.structured_content["approval"]["request_hash"], approve=False)
    answer = await _call(ledger, server)
    assert answer.is_error
    assert "over the balance" in answer.content[0].text
    assert done == []
