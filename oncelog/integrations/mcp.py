"""MCP server tools through the ledger, called from the agent's side of a session.

    run = LedgerRun(client, "run-42")        # a LedgerClient: MCP is async
    async with Client(server) as session:
        tools = LedgerMcpTools(session, run)
        result = await tools.call_tool("charge", {"order_id": "4471"})

The agent names the call (the server cannot tell a rerun from a new run), so the ledger
wraps ``call_tool`` of an MCP ``Client`` or ``ClientSession``: each call is claimed, the
recorded ``CallToolResult`` is replayed on rerun, and a rerun with other arguments raises
:class:`~oncelog.errors.ConflictError` (inside ``async with Client(...)``, MCP's task group
reports it in an ``ExceptionGroup``: catch it with ``except* ConflictError``). The call's
``_meta`` carries the idempotency key and epoch to the server (:data:`IDEMPOTENCY_KEY_META`,
:data:`EPOCH_META`), where :func:`ledger_identity` reads them for the services the tool
calls. A result with ``isError`` is recorded like any other: the server answered, and a
rerun sees the same answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol, cast

from oncelog.integrations.extras import requires_extra
from oncelog.integrations.run import LedgerRun, current_call

with requires_extra("mcp"):
    from mcp.types import CallToolResult, RequestParamsMeta

__all__ = ["EPOCH_META", "IDEMPOTENCY_KEY_META", "LedgerMcpTools", "ledger_identity"]

IDEMPOTENCY_KEY_META: Final = "oncelog/idempotency-key"
"""The ``_meta`` key of a call's idempotency key."""
EPOCH_META: Final = "oncelog/epoch"
"""The ``_meta`` key of a call's epoch (the fencing token of the attempt)."""


class ToolCaller(Protocol):
    """What ``LedgerMcpTools`` wraps: ``mcp.Client`` and ``mcp.ClientSession`` both fit."""

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        meta: RequestParamsMeta | None = None,
    ) -> CallToolResult: ...


class LedgerMcpTools:
    """An MCP client's ``call_tool``, each call claimed, replayed on rerun, completed or failed."""

    def __init__(self, session: ToolCaller, run: LedgerRun) -> None:
        self.session, self.run = session, run

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> CallToolResult:
        """Call the server's tool ``name`` through the ledger."""
        args = dict(arguments or {})

        async def call() -> Any:
            ctx = current_call()
            # An open map (extra_items=Any), which mypy does not model yet.
            identity = {IDEMPOTENCY_KEY_META: ctx.idempotency_key, EPOCH_META: ctx.epoch}
            meta = cast(RequestParamsMeta, identity)
            result = await self.session.call_tool(name, args, meta=meta)
            return result.model_dump(mode="json", by_alias=True, exclude_none=True)

        return CallToolResult.model_validate(await self.run.acall(name, args, call))


def ledger_identity(meta: Mapping[str, Any] | None) -> tuple[str, int] | None:
    """On the server: the (idempotency key, epoch) the ledger sent in a call's ``_meta``.

    ``meta`` is the request's ``_meta`` (``ctx.request_context.meta`` in an ``MCPServer``
    tool); None when the call did not come through the ledger.
    """
    if not meta or IDEMPOTENCY_KEY_META not in meta:
        return None
    return str(meta[IDEMPOTENCY_KEY_META]), int(meta.get(EPOCH_META, 0))
