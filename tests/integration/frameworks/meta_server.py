"""An MCP server (stdio) whose ``charge`` answers the ledger identity it got in ``_meta``.

    python tests/integration/frameworks/meta_server.py

For the Pydantic AI adapter's MCP toolset path, which starts it as a subprocess.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

from oncelog.integrations.mcp import ledger_identity

server = MCPServer("identity")


@server.tool()
def charge(order_id: str, ctx: Context) -> dict[str, Any]:
    """Charge an order; answers the idempotency key and epoch the call carried."""
    identity = ledger_identity(ctx.request_context.meta)
    key, epoch = identity if identity is not None else (None, None)
    return {"order_id": order_id, "idempotency_key": key, "epoch": epoch}


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup(order_id: str) -> str:
    """Look an order up (read only)."""
    return f"order {order_id}"


if __name__ == "__main__":
    server.run()
