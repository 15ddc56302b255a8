"""The ledger's identity in an MCP call's ``_meta``, on every MCP path; no framework imported.

The agent's side puts the call's idempotency key and epoch into the request's ``_meta``
(:func:`identity_meta`); the server reads them back with :func:`ledger_identity`. Used by
:mod:`oncelog.integrations.mcp` (an MCP ``Client`` or ``ClientSession``), by the Pydantic AI
adapter for MCP toolsets, and by the OpenAI Agents adapter's ``tool_meta_resolver``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from oncelog.integrations.run import NoLedgerCallError, current_call

__all__ = ["EPOCH_META", "IDEMPOTENCY_KEY_META", "identity_meta", "ledger_identity"]

IDEMPOTENCY_KEY_META: Final = "oncelog/idempotency-key"
"""The ``_meta`` key of a call's idempotency key."""
EPOCH_META: Final = "oncelog/epoch"
"""The ``_meta`` key of a call's epoch (the fencing token of the attempt)."""


def identity_meta() -> dict[str, Any]:
    """The ``_meta`` entries of the ledger call running now; empty outside a ledger call."""
    try:
        ctx = current_call()
    except NoLedgerCallError:
        return {}
    return {IDEMPOTENCY_KEY_META: ctx.idempotency_key, EPOCH_META: ctx.epoch}


def ledger_identity(meta: Mapping[str, Any] | None) -> tuple[str, int] | None:
    """On the server: the (idempotency key, epoch) the ledger sent in a call's ``_meta``.

    ``meta`` is the request's ``_meta`` (``ctx.request_context.meta`` in an ``MCPServer``
    tool); None when the call did not come through the ledger.
    """
    if not meta or IDEMPOTENCY_KEY_META not in meta:
        return None
    return str(meta[IDEMPOTENCY_KEY_META]), int(meta.get(EPOCH_META, 0))
