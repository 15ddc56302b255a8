"""LangChain tools through the ledger, in a LangGraph agent or on their own.

    run = LedgerRun(client, "run-42")        # or channel_id=None: LangGraph's thread_id
    tools = ledger_tools([charge, search], run)
    graph.add_node("tools", ToolNode(tools))

Each wrapped tool keeps the original's name, description and argument schema, so the model
and ``ToolNode`` see the same tool. With a ``SyncLedgerClient`` it runs on ``invoke``, with a
``LedgerClient`` on ``ainvoke``. The channel is the run's, else the ``thread_id`` of the
graph's config. Keys, effects and downstream identity: see :mod:`oncelog.integrations.run`.
``ToolNode``'s default error handling re-raises a :class:`~oncelog.errors.ConflictError`,
so a rerun whose model asks for other arguments stops the graph loudly.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

from oncelog.integrations.extras import requires_extra
from oncelog.integrations.framework_spans import langchain_span
from oncelog.integrations.run import LedgerRun

with requires_extra("langchain"):
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool, StructuredTool

__all__ = ["ledger_tool", "ledger_tools"]


def ledger_tool(tool: BaseTool, run: LedgerRun) -> StructuredTool:
    """``tool`` run through the ledger: claimed, replayed on rerun, completed or failed."""
    name = tool.name

    def func(config: RunnableConfig, **kwargs: Any) -> Any:
        thunk = lambda: tool.invoke(kwargs)  # noqa: E731
        with langchain_span():  # the ledger's spans under the tool's (OpenTelemetry on)
            return run.call(name, kwargs, thunk, framework_id=_thread_id(config))

    async def coroutine(config: RunnableConfig, **kwargs: Any) -> Any:
        thunk = lambda: tool.ainvoke(kwargs)  # noqa: E731
        with langchain_span():
            return await run.acall(name, kwargs, thunk, framework_id=_thread_id(config))

    is_async = inspect.iscoroutinefunction(run.client.claim_execution)
    return StructuredTool(
        name=name,
        description=tool.description,
        args_schema=tool.args_schema or tool.get_input_schema(),
        func=None if is_async else func,
        coroutine=coroutine if is_async else None,
        return_direct=tool.return_direct,
    )


def ledger_tools(tools: Iterable[BaseTool], run: LedgerRun) -> list[BaseTool]:
    """:func:`ledger_tool` of each tool."""
    return [ledger_tool(tool, run) for tool in tools]


def _thread_id(config: RunnableConfig) -> str | None:
    thread = (config.get("configurable") or {}).get("thread_id")
    return None if thread is None else str(thread)
