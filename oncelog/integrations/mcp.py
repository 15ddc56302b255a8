"""MCP server tools through the ledger, called from the agent's side of a session.

    run = LedgerRun(client, "run-42")        # a LedgerClient: MCP is async
    async with ledger_session(Client(server), run) as tools:
        result = await tools.call_tool("charge", {"order_id": "4471"})

The agent names the call (the server cannot tell a rerun from a new run), so the ledger
wraps ``call_tool`` of an MCP ``Client`` or ``ClientSession``: each call is claimed, the
recorded ``CallToolResult`` is replayed on rerun, and a rerun with other arguments raises
:class:`~oncelog.errors.ConflictError`. :func:`ledger_session` opens the session and hands
back its :class:`LedgerMcpTools`; it raises the ledger's own errors (a conflict, an
``in_progress``) as they are, not inside the ``ExceptionGroup`` of MCP's task group.

- **Identity.** The call's ``_meta`` carries the idempotency key and epoch to the server
  (:data:`IDEMPOTENCY_KEY_META`, :data:`EPOCH_META`), where :func:`ledger_identity` reads them
  for the services the tool calls.
- **Effects.** A tool without a policy of its own takes its effect from the server's
  annotations: ``readOnlyHint`` makes it ``pure``; any other tool is ``external``.
- **Results.** What is recorded is a ``CallToolResult``. A reconcile hook may answer one, or any
  JSON value (a string becomes its text, an object its structured content too); a record that
  does not read back as a ``CallToolResult`` is a
  :class:`~oncelog.integrations.recorded.RecordedResultError` naming the operation. A result
  with ``isError`` is recorded like any other: the server answered, and a rerun sees the same
  answer.
- **Approvals.** A call that awaits a person's approval on the ledger
  (``ToolPolicy(approval=...)``) answers an error result naming the pending approval (its
  structured content: ``{"approval": {...}}``, with the operation, params and request hash);
  call again once decided: approved, the tool runs once; denied, an error result with the
  reason (:mod:`oncelog.integrations.approvals`).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, TypeVar, cast

from oncelog.errors import ApprovalDeniedError, ApprovalPendingError, LedgerError
from oncelog.integrations.approvals import denial_message, pending_payload
from oncelog.integrations.extras import requires_extra
from oncelog.integrations.mcp_meta import (
    EPOCH_META,
    IDEMPOTENCY_KEY_META,
    identity_meta,
    ledger_identity,
)
from oncelog.integrations.policy import Effect, effect_of_annotations
from oncelog.integrations.recorded import ResultShape, as_json
from oncelog.integrations.run import LedgerRun
from oncelog.producer.recordable import recording

with requires_extra("mcp"):
    from mcp.types import CallToolResult, ListToolsResult, RequestParamsMeta, TextContent
    from pydantic import ValidationError

__all__ = [
    "EPOCH_META",
    "IDEMPOTENCY_KEY_META",
    "MCP_RESULT",
    "LedgerMcpTools",
    "ledger_identity",
    "ledger_session",
]


class ToolCaller(Protocol):
    """What ``LedgerMcpTools`` wraps: ``mcp.Client`` and ``mcp.ClientSession`` both fit."""

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        meta: RequestParamsMeta | None = None,
    ) -> CallToolResult: ...

    async def list_tools(self) -> ListToolsResult: ...


def _as_result(data: Any, *, strict: bool) -> CallToolResult:
    """JSON data as a ``CallToolResult``: a recorded one, or a plain value wrapped in one."""
    if isinstance(data, dict) and "content" in data:
        try:
            return CallToolResult.model_validate(data)
        except ValidationError:
            if strict:  # a record in the result's shape that no longer reads as one
                raise
    if isinstance(data, str):
        return CallToolResult(content=[TextContent(type="text", text=data)])
    structured = data if isinstance(data, dict) else {"result": data}
    text = json.dumps(data, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=structured
    )


def _error_result(text: str, structured: dict[str, Any]) -> CallToolResult:
    """A call that did not run, as an MCP error result (not recorded: nothing ran)."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=True,
    )


def record_result(value: Any) -> Any:
    """What the ledger records of a tool's or a reconcile hook's answer."""
    result = (
        value if isinstance(value, CallToolResult) else _as_result(as_json(value), strict=False)
    )
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


def read_result(recorded: Any) -> CallToolResult:
    """The recorded answer as a ``CallToolResult`` (a plain value recorded earlier, wrapped)."""
    return _as_result(recorded, strict=True)


MCP_RESULT = ResultShape(record=recording(record_result), read=read_result)
"""How MCP results are recorded and replayed."""


class LedgerMcpTools:
    """An MCP client's ``call_tool``, each call claimed, replayed on rerun, completed or failed."""

    def __init__(self, session: ToolCaller, run: LedgerRun) -> None:
        self.session, self.run = session, run
        self._effects: dict[str, Effect | None] | None = None

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None
    ) -> CallToolResult:
        """Call the server's tool ``name`` through the ledger."""
        args = dict(arguments or {})
        effect = await self.effect(name)
        self.run.check(name, effect)

        async def call() -> CallToolResult:
            # An open map (extra_items=Any), which mypy does not model yet.
            meta = cast(RequestParamsMeta, identity_meta())
            return await self.session.call_tool(name, args, meta=meta)

        try:
            result: CallToolResult = await self.run.acall(
                name, args, call, effect=effect, shape=MCP_RESULT
            )
        except ApprovalPendingError as exc:
            return _error_result(str(exc), {"approval": pending_payload(exc)})
        except ApprovalDeniedError as exc:
            return _error_result(denial_message(exc), {"approval_denied": str(exc)})
        return result

    async def effect(self, name: str) -> Effect | None:
        """What the server's annotations say of ``name`` (None: the tool is not listed)."""
        if self._effects is None:
            listed = await self.session.list_tools()
            self._effects = {t.name: effect_of_annotations(t.annotations) for t in listed.tools}
        return self._effects.get(name)


S = TypeVar("S", bound=ToolCaller)


@contextlib.asynccontextmanager
async def ledger_session(
    client: AbstractAsyncContextManager[S], run: LedgerRun
) -> AsyncIterator[LedgerMcpTools]:
    """Open ``client`` (an ``mcp.Client``) and yield its tools through the ledger.

    A ledger error raised inside (a conflict, an ``in_progress``) leaves as itself, not
    inside the ``ExceptionGroup`` that MCP's task group makes of it.
    """
    try:
        async with client as session:
            yield LedgerMcpTools(session, run)
    except BaseExceptionGroup as group:
        lone = _lone_ledger_error(group)
        if lone is None:
            raise
        raise lone from lone.__cause__  # its own cause; the group stays as its context


def _lone_ledger_error(group: BaseExceptionGroup[Any]) -> LedgerError | None:
    matched, rest = group.split(LedgerError)
    if matched is None or rest is not None:
        return None
    leaves: list[BaseException] = []
    stack: list[BaseException] = [matched]
    while stack:
        error = stack.pop()
        if isinstance(error, BaseExceptionGroup):
            stack.extend(error.exceptions)
        else:
            leaves.append(error)
    only = leaves[0] if len(leaves) == 1 else None
    return only if isinstance(only, LedgerError) else None
