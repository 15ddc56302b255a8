"""Function tools of the OpenAI Agents SDK through the ledger.

    run = LedgerRun(client, "run-42")        # a LedgerClient: the SDK is async
    agent = Agent(name="billing", tools=ledger_tools([charge, lookup], run))

Each wrapped ``FunctionTool`` keeps its name, description and schema; only its invocation
goes through the ledger. Keys, effects and downstream identity: see
:mod:`oncelog.integrations.run`. A function tool converted from an MCP server takes its
effect from the tool's MCP annotations (``readOnlyHint`` -> pure); pass
:func:`ledger_meta_resolver` as the MCP server's ``tool_meta_resolver`` and the server gets
the call's idempotency key and epoch in ``_meta``.

**A tool's exception is recorded as a failure.** The SDK's ``failure_error_function`` (by
default a message for the model) still answers the model, but outside the ledger: a
connection error is a retryable failure that a rerun retries, never a completed result that
every rerun replays; a failure for good answers a rerun with the same kind of message.
``ledger_tool(..., error_message_as_result=True)`` records the SDK's message as the call's
result instead. Errors of the ledger itself, such as a
:class:`~oncelog.errors.ConflictError`, stop the run: ``Runner.run`` raises the SDK's
``UserError("Error running tool charge: [conflict] ...")`` with the ledger's error as its
``__cause__``.

**Approvals.** A tool whose policy has an ``approval`` rule gets ``needs_approval``: a call
the rule selects records its intent on the ledger and interrupts the run (the result's
``interruptions``). After a person decides on the ledger, ``state.approve(item)`` and
``Runner.run(agent, state)`` let the call reach the ledger, whose decision stands: approved,
the tool runs once; denied, the model is told the reason (:mod:`oncelog.integrations.approvals`).
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from oncelog.errors import (
    ApprovalDeniedError,
    ExecutionFailedError,
    InvalidArgumentError,
    LedgerError,
)
from oncelog.integrations.approvals import denial_message, intent_recorded
from oncelog.integrations.extras import requires_extra
from oncelog.integrations.mcp_meta import identity_meta
from oncelog.integrations.policy import effect_of_annotations
from oncelog.integrations.run import LedgerRun

with requires_extra("openai-agents"):
    from agents import FunctionTool, Tool
    from agents.tool import (
        maybe_invoke_function_tool_failure_error_function,
        set_function_tool_failure_error_function,
    )
    from agents.tool_context import ToolContext as AgentsToolContext

__all__ = ["ledger_meta_resolver", "ledger_tool", "ledger_tools"]


def ledger_tool(
    tool: FunctionTool, run: LedgerRun, *, error_message_as_result: bool = False
) -> FunctionTool:
    """A copy of ``tool`` whose every call is claimed, replayed on rerun, completed or failed."""
    effect = effect_of_annotations(getattr(tool, "mcp_annotations", None))
    run.check(tool.name, effect)
    inner = tool
    if not error_message_as_result:
        # The copy raises the tool's exception to the ledger instead of answering with a message.
        inner = set_function_tool_failure_error_function(copy.copy(tool), None)

    async def on_invoke_tool(ctx: AgentsToolContext[Any], arguments: str) -> Any:
        params = _params(tool.name, arguments)
        try:
            return await run.acall(
                tool.name, params, lambda: inner.on_invoke_tool(ctx, arguments), effect=effect
            )
        except ApprovalDeniedError as exc:
            return denial_message(exc)
        except Exception as exc:
            if error_message_as_result or not _tools_own(exc):
                raise
            message = await maybe_invoke_function_tool_failure_error_function(
                function_tool=tool, context=ctx, error=exc
            )
            if message is None:  # the tool's own policy: no message, the run fails
                raise
            return message

    if run.policy(tool.name, effect).approval is None:
        return dataclasses.replace(tool, on_invoke_tool=on_invoke_tool)

    async def needs_approval(_: Any, params: dict[str, Any], call_id: str) -> bool:
        return await intent_recorded(run, tool.name, params)

    return dataclasses.replace(tool, on_invoke_tool=on_invoke_tool, needs_approval=needs_approval)


def ledger_tools(
    tools: Iterable[FunctionTool], run: LedgerRun, *, error_message_as_result: bool = False
) -> list[Tool]:
    """:func:`ledger_tool` of each tool."""
    return [ledger_tool(t, run, error_message_as_result=error_message_as_result) for t in tools]


def ledger_meta_resolver(context: Any) -> dict[str, Any] | None:
    """An MCP server's ``tool_meta_resolver``: the ledger call's identity in ``_meta``.

    ``MCPServerStdio(params, tool_meta_resolver=ledger_meta_resolver)``; outside a ledger call
    it adds nothing.
    """
    return identity_meta() or None


def _tools_own(exc: Exception) -> bool:
    """The tool's exception, or its recorded failure replayed: what the model is told about."""
    return isinstance(exc, ExecutionFailedError) or not isinstance(exc, LedgerError)


def _params(tool_name: str, arguments: str) -> dict[str, Any]:
    try:
        params = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(f"{tool_name}: the model's arguments are not JSON") from exc
    if not isinstance(params, dict):
        raise InvalidArgumentError(f"{tool_name}: the model's arguments are not a JSON object")
    return params
