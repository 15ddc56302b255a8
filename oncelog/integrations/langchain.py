"""LangChain tools through the ledger, in a LangGraph agent or on their own.

    run = LedgerRun(client, "run-42")        # or channel_id=None: LangGraph's thread_id
    tools = ledger_tools([charge, search], run)
    graph.add_node("tools", ToolNode(tools))

Each wrapped tool keeps the original's name, description and argument schema, so the model
and ``ToolNode`` see the same tool. With a ``SyncLedgerClient`` it runs on ``invoke``, with a
``LedgerClient`` on ``ainvoke``. The channel is the run's, else the ``thread_id`` of the
graph's config. Keys, effects and downstream identity: see :mod:`oncelog.integrations.run`.
In a LangGraph run with a checkpointer, resuming the thread from an earlier checkpoint runs
the tools in a branch of their own that inherits what came before the fork and replays an
external call another branch completed with the same arguments: see
:mod:`oncelog.integrations.branches`.
``ToolNode``'s default error handling re-raises a :class:`~oncelog.errors.ConflictError`,
so a rerun whose model asks for other arguments stops the graph loudly.

A tool's exception is recorded as a failure. A tool with ``handle_tool_error`` still answers
the model with LangChain's message for a ``ToolException``, but that message is made outside
the ledger, so a rerun retries a retryable failure instead of replaying the message (and
answers a failure for good with the same kind of message). ``error_message_as_result=True``
records the message as the call's result instead, as LangChain alone would.

**Approvals.** In a LangGraph graph, a call that awaits a person's approval on the ledger
(``ToolPolicy(approval=...)``) pauses the graph with ``interrupt(pending)`` (it needs a
checkpointer); resume it with ``Command(resume=...)`` once the person decided on the ledger:
approved, the tool runs once; denied, the model is told the reason
(:mod:`oncelog.integrations.approvals`). Outside a graph the pending error stands.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any

from oncelog.errors import ApprovalDeniedError, ApprovalPendingError, ExecutionFailedError
from oncelog.integrations.approvals import denial_message, pending_payload
from oncelog.integrations.branches import BranchTracker, CheckpointHeads, ListsCheckpoints
from oncelog.integrations.extras import requires_extra
from oncelog.integrations.framework_spans import langchain_span
from oncelog.integrations.run import LedgerRun

with requires_extra("langchain"):
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool, StructuredTool, ToolException

__all__ = ["ledger_tool", "ledger_tools"]


def ledger_tool(
    tool: BaseTool,
    run: LedgerRun,
    *,
    error_message_as_result: bool = False,
    branches: BranchTracker | None = None,
    checkpointer: CheckpointHeads | ListsCheckpoints | None = None,
) -> StructuredTool:
    """``tool`` run through the ledger: claimed, replayed on rerun, completed or failed.

    ``checkpointer``: the graph's (``graph.compile(checkpointer=...)``): with it, a thread
    resumed from an earlier checkpoint runs the tools in a branch of its own (see
    :mod:`oncelog.integrations.branches`). ``branches`` is shared by the tools of one run
    (:func:`ledger_tools` shares one, and then ``checkpointer`` is its).
    """
    name = tool.name
    tracker = BranchTracker(run, checkpointer) if branches is None else branches
    run.check(name)
    # The ledger sees the tool's exception; LangChain's handling (if any) runs outside it.
    handles = False if error_message_as_result else tool.handle_tool_error
    inner = (
        tool if error_message_as_result else tool.model_copy(update={"handle_tool_error": False})
    )

    def once(config: RunnableConfig, **kwargs: Any) -> Any:
        thunk = lambda: inner.invoke(kwargs)  # noqa: E731
        # The ledger's spans under the tool's (OpenTelemetry on).
        with _failure_for_good_as_tool_error(handles), langchain_span():
            branch = tracker.branch(config)
            return run.call(name, kwargs, thunk, framework_id=_thread_id(config), branch=branch)

    async def aonce(config: RunnableConfig, **kwargs: Any) -> Any:
        thunk = lambda: inner.ainvoke(kwargs)  # noqa: E731
        with _failure_for_good_as_tool_error(handles), langchain_span():
            branch = await tracker.abranch(config)
            thread = _thread_id(config)
            return await run.acall(name, kwargs, thunk, framework_id=thread, branch=branch)

    def func(config: RunnableConfig, **kwargs: Any) -> Any:
        return _paused(lambda: once(config, **kwargs))

    async def coroutine(config: RunnableConfig, **kwargs: Any) -> Any:
        return await _apaused(lambda: aonce(config, **kwargs))

    is_async = run.awaits
    return StructuredTool(
        name=name,
        description=tool.description,
        args_schema=tool.args_schema or tool.get_input_schema(),
        func=None if is_async else func,
        coroutine=coroutine if is_async else None,
        return_direct=tool.return_direct,
        handle_tool_error=handles,
        handle_validation_error=tool.handle_validation_error,
    )


def ledger_tools(
    tools: Iterable[BaseTool],
    run: LedgerRun,
    *,
    error_message_as_result: bool = False,
    checkpointer: CheckpointHeads | ListsCheckpoints | None = None,
) -> list[BaseTool]:
    """:func:`ledger_tool` of each tool, sharing one :class:`BranchTracker`."""
    tracker = BranchTracker(run, checkpointer)
    return [
        ledger_tool(t, run, error_message_as_result=error_message_as_result, branches=tracker)
        for t in tools
    ]


@contextlib.contextmanager
def _failure_for_good_as_tool_error(handles: object) -> Iterator[None]:
    """A rerun of a call that failed for good answers as the first run did: a ToolException
    (LangChain's message for the model) when the tool handles its errors."""
    try:
        yield
    except ExecutionFailedError as exc:
        if not handles:
            raise
        raise ToolException(str(exc)) from exc


def _paused(call: Callable[[], Any]) -> Any:
    """``call()``; a pending approval pauses the graph, and once it is resumed the call is
    made again: the ledger's decision stands (denied: the model is told the reason)."""
    try:
        try:
            return call()
        except ApprovalPendingError as exc:
            _interrupt(exc)  # returns only when the graph is resumed
            return call()
    except ApprovalDeniedError as exc:
        return denial_message(exc)


async def _apaused(call: Callable[[], Awaitable[Any]]) -> Any:
    """Async :func:`_paused`."""
    try:
        try:
            return await call()
        except ApprovalPendingError as exc:
            _interrupt(exc)
            return await call()
    except ApprovalDeniedError as exc:
        return denial_message(exc)


def _interrupt(exc: ApprovalPendingError) -> None:
    """Pause the graph on a pending approval (LangGraph's ``interrupt``); outside a graph
    there is nothing to pause, and the error stands."""
    try:
        from langgraph.types import interrupt  # noqa: PLC0415  # LangChain alone has none
    except ImportError:
        raise exc from None
    interrupt(pending_payload(exc))


def _thread_id(config: RunnableConfig) -> str | None:
    thread = (config.get("configurable") or {}).get("thread_id")
    return None if thread is None else str(thread)
