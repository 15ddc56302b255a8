"""Pydantic AI tools through the ledger: a toolset wrapper.

    run = LedgerRun(client, "run-42")        # a LedgerClient: Pydantic AI is async
    agent = Agent(model, toolsets=[ledger_toolset([charge, lookup], run)])

:class:`LedgerToolset` wraps any toolset (a ``FunctionToolset``, an MCP server's, a
combined one); :func:`ledger_toolset` also takes plain tool functions or ``Tool`` objects.
Keys, effects and downstream identity: see :mod:`oncelog.integrations.run`. A tool that
raises ``ModelRetry`` is recorded as a retryable failure (no effect happened), so a rerun
asks it again; the model's next try is the tool's next call (``<tool>#<k+1>``). Any other
exception of a tool is recorded as a failure and ends the run, as Pydantic AI alone does.

**MCP toolsets** (``pydantic_ai.mcp.MCPToolset``, in the ``oncelog[pydantic-ai]`` extra):
each call sends the ledger's idempotency key and epoch to the server in ``_meta`` (the
toolset's ``process_tool_call`` is wrapped to add them, around any hook of your own), and a
tool without a policy of its own takes its effect from the server's annotations
(``readOnlyHint`` -> pure, else external).

**Approvals.** A call that awaits a person's approval on the ledger
(``ToolPolicy(approval=...)``) is deferred as Pydantic AI's ``ApprovalRequired``: the run
ends with ``DeferredToolRequests`` (add it to the agent's ``output_type``), and
:func:`resume_approvals` resumes it once decided (:mod:`oncelog.integrations.approvals`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from oncelog.errors import ApprovalDeniedError, ApprovalPendingError
from oncelog.integrations.approvals import denial_message, pending_payload
from oncelog.integrations.extras import requires_extra
from oncelog.integrations.mcp_meta import identity_meta
from oncelog.integrations.policy import effect_of_annotations
from oncelog.integrations.run import LedgerRun

with requires_extra("pydantic-ai"):
    from pydantic_ai import (
        ApprovalRequired,
        DeferredToolRequests,
        DeferredToolResults,
        ModelRetry,
        RunContext,
        Tool,
    )
    from pydantic_ai.toolsets import AbstractToolset, FunctionToolset, WrapperToolset
    from pydantic_ai.toolsets.abstract import ToolsetTool

__all__ = ["LedgerToolset", "ledger_toolset", "resume_approvals"]

_IDENTITY_HOOK = "__oncelog_identity__"  # marks a process_tool_call that adds the identity


@dataclass
class LedgerToolset(WrapperToolset[Any]):
    """``wrapped``'s tools, each call claimed, replayed on rerun, completed or failed."""

    run: LedgerRun

    def __post_init__(self) -> None:
        self.wrapped.apply(_send_identity)

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Call ``name`` through the ledger."""
        effect = effect_of_annotations((tool.tool_def.metadata or {}).get("annotations"))
        self.run.check(name, effect)

        async def call() -> Any:
            try:
                return await self.wrapped.call_tool(name, tool_args, ctx, tool)
            except ModelRetry as exc:
                exc.retryable = True  # type: ignore[attr-defined]  # read by the executor
                raise

        try:
            return await self.run.acall(name, tool_args, call, effect=effect)
        except ApprovalPendingError as exc:
            raise ApprovalRequired(metadata=pending_payload(exc)) from exc
        except ApprovalDeniedError as exc:
            return denial_message(exc)


def resume_approvals(requests: DeferredToolRequests) -> DeferredToolResults:
    """The results that resume a run paused on pending approvals: each call may reach the
    ledger again, whose decision (approved: the tool runs; denied: the model is told the
    reason) is the only one. Pass them with the paused run's messages:
    ``agent.run(message_history=..., deferred_tool_results=resume_approvals(requests))``."""
    return DeferredToolResults(approvals={call.tool_call_id: True for call in requests.approvals})


def ledger_toolset(
    tools: AbstractToolset[Any] | Sequence[Tool[Any] | Any], run: LedgerRun
) -> LedgerToolset:
    """A :class:`LedgerToolset` over a toolset, or over tools (functions or ``Tool``)."""
    wrapped = tools if isinstance(tools, AbstractToolset) else FunctionToolset(list(tools))
    return LedgerToolset(wrapped, run)


def _send_identity(toolset: AbstractToolset[Any]) -> None:
    """On an MCP toolset, wrap ``process_tool_call`` so that each call's ``_meta`` carries
    the ledger's identity (outside a ledger call it adds nothing)."""
    try:
        from pydantic_ai.mcp import MCPToolset  # noqa: PLC0415  # needs fastmcp, the MCP extra
    except ImportError:
        return
    if not isinstance(toolset, MCPToolset):
        return
    own = toolset.process_tool_call
    if own is not None and getattr(own, _IDENTITY_HOOK, False):
        return

    async def process_tool_call(
        ctx: RunContext[Any], call_tool: Any, name: str, tool_args: dict[str, Any]
    ) -> Any:
        async def with_identity(
            name: str, args: dict[str, Any], *, metadata: dict[str, Any] | None = None
        ) -> Any:
            return await call_tool(name, args, metadata={**(metadata or {}), **identity_meta()})

        if own is None:
            return await with_identity(name, tool_args)
        return await own(ctx, with_identity, name, tool_args)

    setattr(process_tool_call, _IDENTITY_HOOK, True)
    toolset.process_tool_call = process_tool_call
