"""Function tools of the OpenAI Agents SDK through the ledger.

    run = LedgerRun(client, "run-42")        # a LedgerClient: the SDK is async
    agent = Agent(name="billing", tools=ledger_tools([charge, lookup], run))

Each wrapped ``FunctionTool`` keeps its name, description and schema; only its invocation
goes through the ledger. Keys, effects and downstream identity: see
:mod:`oncelog.integrations.run`. The SDK's own failure policy still applies inside: by
default a tool's exception becomes a message for the model, and that message is what the
ledger records and a rerun replays (pass ``failure_error_function=None`` to
``function_tool`` to record it as a failure instead). Errors of the ledger itself, such as
a :class:`~oncelog.errors.ConflictError`, stop the run: ``Runner.run`` raises the SDK's
``UserError("Error running tool charge: [conflict] ...")`` with the ledger's error as its
``__cause__``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from typing import Any

from oncelog.errors import InvalidArgumentError
from oncelog.integrations.extras import requires_extra
from oncelog.integrations.run import LedgerRun

with requires_extra("openai-agents"):
    from agents import FunctionTool, Tool
    from agents.tool_context import ToolContext as AgentsToolContext

__all__ = ["ledger_tool", "ledger_tools"]


def ledger_tool(tool: FunctionTool, run: LedgerRun) -> FunctionTool:
    """A copy of ``tool`` whose every call is claimed, replayed on rerun, completed or failed."""
    invoke = tool.on_invoke_tool

    async def on_invoke_tool(ctx: AgentsToolContext[Any], arguments: str) -> Any:
        return await run.acall(
            tool.name, _params(tool.name, arguments), lambda: invoke(ctx, arguments)
        )

    return dataclasses.replace(tool, on_invoke_tool=on_invoke_tool)


def ledger_tools(tools: Iterable[FunctionTool], run: LedgerRun) -> list[Tool]:
    """:func:`ledger_tool` of each tool."""
    return [ledger_tool(tool, run) for tool in tools]


def _params(tool_name: str, arguments: str) -> dict[str, Any]:
    try:
        params = json.loads(arguments or "{}")
    except json.JSONDecodeError as exc:
        raise InvalidArgumentError(f"{tool_name}: the model's arguments are not JSON") from exc
    if not isinstance(params, dict):
        raise InvalidArgumentError(f"{tool_name}: the model's arguments are not a JSON object")
    return params
