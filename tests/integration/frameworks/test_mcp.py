"""MCP server tools through the ledger, over MCP's in-memory client-server session."""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import ValidationError

from oncelog.errors import ConflictError, ToolInProgressError
from oncelog.identity.ids import operation_id
from oncelog.integrations import (
    LedgerRun,
    RecordedResultError,
    ToolPolicy,
    UnguardedToolWarning,
)
from oncelog.integrations.mcp import LedgerMcpTools, ledger_identity, ledger_session
from oncelog.producer.executor import ToolContext
from oncelog.schemas.models import Effect, PreviousAttempt
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


# --- the crash window: what a hook may answer, annotations, errors that leave as themselves --


class Died(BaseException):
    """The worker dies right after the server answered: nothing recorded, the lease held."""


class DiesAfterTheCall:
    def __init__(self, session: Any) -> None:
        self.session = session

    async def call_tool(self, name: str, arguments: Any = None, *, meta: Any = None) -> Any:
        await self.session.call_tool(name, arguments, meta=meta)
        raise Died

    async def list_tools(self) -> Any:
        return await self.session.list_tools()


async def _charge_in_a_session(
    ledger: InMemoryLedger, server: MCPServer, args: dict[str, Any], *,
    policies: dict[str, ToolPolicy] | None = None, dies: bool = False,
) -> CallToolResult:  # fmt: skip
    """One charge through the ledger in a session of its own; ``dies`` after the server."""
    run = LedgerRun(ledger.client(), "run-9", policies or {})
    async with ledger_session(Client(server), run) as tools:
        if dies:
            tools.session = DiesAfterTheCall(tools.session)
        return await tools.call_tool("charge", args)


async def _crash_then_rerun(
    ledger: InMemoryLedger, server: MCPServer, answer: Any, *, lease_s: float = 30
) -> CallToolResult:
    """Charge, die after the server charged; the rerun's hook answers ``answer``."""

    async def reconcile(previous: PreviousAttempt, ctx: ToolContext) -> Any:
        return answer

    policy = ToolPolicy(reconcile=reconcile, lease_seconds=lease_s)
    args = {"order_id": "4472", "amount_cents": 4200}
    policies = {"charge": policy}
    with pytest.raises(BaseExceptionGroup) as info:  # raised inside MCP's task group
        await _charge_in_a_session(ledger, server, args, policies=policies, dies=True)
    assert info.group_contains(Died)
    ledger.advance(lease_s + 1)
    return await _charge_in_a_session(ledger, server, args, policies=policies)


@pytest.mark.parametrize(
    ("answer", "content", "structured"),
    [
        ("charged ch_1", "charged ch_1", None),
        ({"charge_id": "ch_1"}, '{"charge_id": "ch_1"}', {"charge_id": "ch_1"}),
        (CallToolResult(content=[TextContent(type="text", text="ch_1")]), "ch_1", None),
    ],
    ids=["a string", "an object", "a CallToolResult"],
)
async def test_a_hooks_answer_is_recorded_as_a_call_tool_result_and_replays(
    answer: Any, content: str, structured: Any
) -> None:
    ledger, payments = InMemoryLedger(), Payments()
    server = _server(payments)
    result = await _crash_then_rerun(ledger, server, answer)
    assert len(payments.charges) == 1
    assert result.content == [TextContent(type="text", text=content)]
    assert result.structured_content == structured
    # Every later rerun replays the same CallToolResult, never a validation error.
    async with ledger_session(Client(server), LedgerRun(ledger.client(), "run-9")) as tools:
        again = await tools.call_tool("charge", {"order_id": "4472", "amount_cents": 4200})
    assert again == result
    execution = ledger.execution(operation_id("run-9", "charge#1"))
    assert execution is not None
    assert (execution.status, execution.epoch) == ("completed", 2)


async def test_a_record_that_is_no_call_tool_result_is_a_typed_error_naming_the_operation() -> None:
    ledger = InMemoryLedger()
    client = ledger.client()
    args = {"order_id": "1", "amount_cents": 1}
    claim = await client.claim_execution("run-9", "charge#1", tool_name="charge", params=args)
    await client.complete_execution(claim.execution, claim.claim_token, {"content": "not a list"})
    with pytest.raises(RecordedResultError) as info:
        async with ledger_session(
            Client(_server(Payments())), LedgerRun(ledger.client(), "run-9")
        ) as tools:
            await tools.call_tool("charge", args)
    assert f"operation {claim.execution.id} (call 'charge#1' of run 'run-9')" in str(info.value)
    assert isinstance(info.value.__cause__, ValidationError)


async def test_annotations_set_the_effect_of_a_tool_without_a_policy() -> None:
    ledger, server = InMemoryLedger(), MCPServer("shop")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def lookup(order_id: str) -> str:
        """Look an order up."""
        return f"order {order_id}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, idempotent_hint=False))
    def refund(order_id: str) -> str:
        """Refund an order."""
        return f"refunded {order_id}"

    run = LedgerRun(ledger.client(), "run-3")
    async with ledger_session(Client(server), run) as tools:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UnguardedToolWarning)  # a pure tool is not warned of
            await tools.call_tool("lookup", {"order_id": "1"})
        with pytest.warns(UnguardedToolWarning, match="'refund'"):
            await tools.call_tool("refund", {"order_id": "1"})
    effects = [ledger.state(operation_id("run-3", k)) for k in ("lookup#1", "refund#1")]
    assert [None if s is None else s.effect for s in effects] == [Effect.PURE, Effect.EXTERNAL]


async def test_ledger_errors_leave_the_session_as_themselves() -> None:
    ledger, payments = InMemoryLedger(), Payments()
    server = _server(payments)
    args = {"order_id": "4472", "amount_cents": 4200}
    with pytest.raises(BaseExceptionGroup):
        await _charge_in_a_session(ledger, server, args, dies=True)
    # The dead worker's lease is live: in_progress, naming the lapse and how to wait.
    with pytest.raises(ToolInProgressError, match=r'lease lapses at .* on_in_progress="wait"'):
        await _charge_in_a_session(ledger, server, args)
    ledger.advance(61)
    with pytest.raises(ConflictError):
        await _charge_in_a_session(ledger, server, {**args, "order_id": "9999"})
