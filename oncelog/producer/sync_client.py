"""``SyncLedgerClient``: the same calls as :class:`LedgerClient`, blocking."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, Self, TypeVar, Unpack

from oncelog.producer.base import ClientBase
from oncelog.producer.calls import PendingCall, RequestBuilder
from oncelog.producer.executor import run_spec_sync
from oncelog.producer.tool_model import (
    SyncReconcile,
    SyncToolFn,
    ToolOptions,
    ToolRun,
    ToolSpec,
    ToolTarget,
)

P = ParamSpec("P")
T = TypeVar("T")


def blocking(
    build: Callable[Concatenate[RequestBuilder, P], PendingCall[T]],
) -> Callable[Concatenate[SyncLedgerClient, P], T]:
    """A blocking client method from a request builder: send, wait, interpret."""

    @functools.wraps(build)
    def method(self: SyncLedgerClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        pending = build(self.requests, *args, **kwargs)
        return pending.interpret(self.transport.call(pending.request))

    return method


class SyncLedgerClient(ClientBase):
    """Claim, heartbeat, complete, fail, release and cancel executions, blocking.

    Every decision is read back from the log. Waits are bounded by ``timeouts``
    and raise :class:`~oncelog.errors.LedgerTimeoutError`.
    """

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.close()

    claim_execution = blocking(RequestBuilder.claim_execution)
    complete_execution = blocking(RequestBuilder.complete_execution)
    fail_execution = blocking(RequestBuilder.fail_execution)
    heartbeat_execution = blocking(RequestBuilder.heartbeat_execution)
    release_execution = blocking(RequestBuilder.release_execution)
    get_execution = blocking(RequestBuilder.get_execution)
    cancel_execution = blocking(RequestBuilder.cancel_execution)

    def run_tool(
        self, channel_id: str, key_name: str | None = None, *, step: int | None = None,
        tool_name: str, params: Mapping[str, Any], fn: SyncToolFn,
        reconcile: SyncReconcile | None = None, **options: Unpack[ToolOptions],
    ) -> ToolRun:  # fmt: skip
        """Claim, run a blocking ``fn`` under a heartbeat thread, then complete or fail:
        see :mod:`oncelog.producer.executor` (``options`` are :class:`ToolSpec`'s fields)."""
        target = ToolTarget(channel_id, key_name, step)
        spec = ToolSpec(tool_name, **options)
        return run_spec_sync(self, spec, target, params, fn, reconcile=reconcile)
