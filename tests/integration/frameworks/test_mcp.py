"""MCP server tools through the ledger, over MCP's in-memory client-server session."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult

from oncelog.errors import ConflictError
from oncelog.identity.ids import operation_id
from oncelog.integrations import LedgerRun
from oncelog.integrations.mcp import LedgerMcpTools, ledger_identity
from oncelog.testing import InMemoryLedger
from tests.integration.contract import Backend
from tests.integration.frameworks.downstream import Crash, Payments


def _server(payments: Payments) -> MCPServer:
    server = MCPServer("billing")

    @server.tool()
    def charge(order_id: str, amount_cents: int, ctx: Context) -> dict[str, Any]:
        """Charge the customer for an order."""
        identity = ledger_identity(ctx.request_context.meta)
        assert identity is not None, "the ledger sends the idempotency key in _meta"
        return payments.charge(order_id, amount_cents, identity)

    return server


async def _agent(
    server: MCPServer, run: LedgerRun, order_id: str, *, crash: bool
) -> CallToolResult:
    """A scripted agent: one charge through the ledger, then the rest of its run."""
    async with Client(server) as session:
        result = await LedgerMcpTools(session, run).call_tool(
            "charge", {"order_id": order_id, "amount_cents": 4200}
        )
    if crash:
        raise Crash("the process dies before the run ends")
    return result


async def test_a_rerun_after_a_crash_replays_the_charge(ledger_backend: Backend) -> None:
    payments = Payments()
    server = _server(payments)
    with pytest.raises(Crash):
        await _agent(server, LedgerRun(ledger_backend.async_client(), "run-42"), "4471", crash=True)
    rerun = LedgerRun(ledger_backend.async_client(), "run-42")
    result = await _agent(server, rerun, "4471", crash=False)
    assert len(payments.charges) == 1
    assert result.structured_content == {"charge_id": "ch_1", "order_id": "4471"}
    assert not result.is_error


async def test_a_rerun_with_other_arguments_raises_a_conflict() -> None:
    ledger, payments = InMemoryLedger(), Payments()
    server = _server(payments)
    with pytest.raises(Crash):
        await _agent(server, LedgerRun(ledger.client(), "run-42"), "4471", crash=True)
    # Raised inside `async with Client(...)`: MCP's task group reports it in an ExceptionGroup.
    with pytest.raises(ExceptionGroup) as info:
        await _agent(server, LedgerRun(ledger.client(), "run-42"), "9999", crash=False)
    assert info.group_contains(ConflictError, match=r"\[conflict\]")
    assert len(payments.charges) == 1


async def test_the_server_tool_gets_the_calls_idempotency_key_and_epoch() -> None:
    ledger, payments = InMemoryLedger(), Payments()
    await _agent(_server(payments), LedgerRun(ledger.client(), "run-3"), "1", crash=False)
    execution = ledger.execution(operation_id("run-3", "charge#1"))
    assert execution is not None
    assert (payments.charges[0]["idempotency_key"], payments.charges[0]["epoch"]) == (
        execution.idempotency_key,
        execution.epoch,
    )


def test_a_call_without_the_ledger_has_no_identity() -> None:
    assert ledger_identity(None) is None
    assert ledger_identity({"other": 1}) is None
