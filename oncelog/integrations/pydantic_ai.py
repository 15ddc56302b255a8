"""Pydantic AI tools through the ledger: a toolset wrapper.

    run = LedgerRun(client, "run-42")        # a LedgerClient: Pydantic AI is async
    agent = Agent(model, toolsets=[ledger_toolset([charge, lookup], run)])

:class:`LedgerToolset` wraps any toolset (a ``FunctionToolset``, an MCP server's, a
combined one); :func:`ledger_toolset` also takes plain tool functions or ``Tool`` objects.
Keys, effects and downstream identity: see :mod:`oncelog.integrations.run`. A tool that
raises ``ModelRetry`` is recorded as a retryable failure (no effect happened), so a rerun
asks it again; the model's next try is the tool's next call (``<tool>#<k+1>``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from oncelog.integrations.extras import requires_extra
from oncelog.integrations.run import LedgerRun

with requires_extra("pydantic-ai"):
    from pydantic_ai import ModelRetry, RunContext, Tool
    from pydantic_ai.toolsets import AbstractToolset, FunctionToolset, WrapperToolset
    from pydantic_ai.toolsets.abstract import ToolsetTool

__all__ = ["LedgerToolset", "ledger_toolset"]


@dataclass
class LedgerToolset(WrapperToolset[Any]):
    """``wrapped``'s tools, each call claimed, replayed on rerun, completed or failed."""

    run: LedgerRun

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Call ``name`` through the ledger."""

        async def call() -> Any:
            try:
                return await self.wrapped.call_tool(name, tool_args, ctx, tool)
            except ModelRetry as exc:
                exc.retryable = True  # type: ignore[attr-defined]  # read by the executor
                raise

        return await self.run.acall(name, tool_args, call)


def ledger_toolset(
    tools: AbstractToolset[Any] | Sequence[Tool[Any] | Any], run: LedgerRun
) -> LedgerToolset:
    """A :class:`LedgerToolset` over a toolset, or over tools (functions or ``Tool``)."""
    wrapped = tools if isinstance(tools, AbstractToolset) else FunctionToolset(list(tools))
    return LedgerToolset(wrapped, run)
