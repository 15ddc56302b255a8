"""``SyncLedgerClient``: the same calls as :class:`LedgerClient`, blocking."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

from oncelog.producer.base import ClientBase, ExecutionRef
from oncelog.producer.calls import Call
from oncelog.producer.executor import (
    DEFAULT_RETRY_ON,
    DEFAULT_WAIT_TIMEOUT_S,
    InProgressPolicy,
    ToolRun,
)
from oncelog.producer.protocol import DEFAULT_RETENTION_S
from oncelog.producer.results import Claim, Execution, Heartbeat
from oncelog.producer.sync_executor import SyncReconcile, SyncToolFn, run_tool_sync

T = TypeVar("T")


class SyncLedgerClient(ClientBase):
    """Blocking twin of :class:`~oncelog.producer.client.LedgerClient`."""

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.close()

    def _run(self, call: Call[T]) -> T:
        self.open()
        assert self._dispatcher is not None
        request, interpret = call
        return interpret(self._dispatcher.call(request))

    def claim_execution(
        self,
        channel_id: str,
        key_name: str | None = None,
        *,
        step: int | None = None,
        tool_name: str,
        params: Mapping[str, Any],
        dedup_fields: Sequence[str] | None = None,
        lease_seconds: float = 60,
        retention_seconds: float = DEFAULT_RETENTION_S,
        effect: str = "external",
    ) -> Claim:
        """See :meth:`LedgerClient.claim_execution`."""
        return self._run(
            self._calls.claim(
                channel_id, key_name, step, tool_name=tool_name, params=params,
                dedup_fields=dedup_fields, lease_seconds=lease_seconds,
                retention_seconds=retention_seconds, effect=effect,
            )
        )  # fmt: skip

    def complete_execution(
        self, execution_id: ExecutionRef, claim_token: str, result: Any, *,
        channel_id: str | None = None, key_name: str | None = None,
    ) -> Execution:  # fmt: skip
        """See :meth:`LedgerClient.complete_execution`."""
        route = self._calls.route(execution_id, channel_id, key_name)
        return self._run(self._calls.complete(route, claim_token, result))

    def fail_execution(
        self, execution_id: ExecutionRef, claim_token: str, error: str, retryable: bool = False,
        *, channel_id: str | None = None, key_name: str | None = None,
    ) -> Execution:  # fmt: skip
        """See :meth:`LedgerClient.fail_execution`."""
        route = self._calls.route(execution_id, channel_id, key_name)
        return self._run(self._calls.fail(route, claim_token, error, retryable))

    def heartbeat_execution(
        self, execution_id: ExecutionRef, claim_token: str, lease_seconds: float | None = None,
        *, channel_id: str | None = None, key_name: str | None = None,
    ) -> Heartbeat:  # fmt: skip
        """See :meth:`LedgerClient.heartbeat_execution`."""
        route = self._calls.route(execution_id, channel_id, key_name)
        return self._run(self._calls.heartbeat(route, claim_token, lease_seconds))

    def release_execution(
        self, execution_id: ExecutionRef, claim_token: str, *,
        channel_id: str | None = None, key_name: str | None = None,
    ) -> Execution:  # fmt: skip
        """See :meth:`LedgerClient.release_execution`."""
        route = self._calls.route(execution_id, channel_id, key_name)
        return self._run(self._calls.release(route, claim_token))

    def get_execution(
        self, execution_id: ExecutionRef, *, channel_id: str | None = None,
        key_name: str | None = None,
    ) -> Execution | None:  # fmt: skip
        """The execution as decided after every request sent before this call; None if absent.

        It is a read through the log (a ``get`` request judged by the projector
        in order), not a lookup in a possibly lagging projection.
        """
        route = self._calls.route(execution_id, channel_id, key_name)
        return self._run(self._calls.get(route))

    def cancel_execution(
        self, execution_id: ExecutionRef, reason: str | None = None, *,
        channel_id: str | None = None, key_name: str | None = None,
    ) -> str:  # fmt: skip
        """See :meth:`LedgerClient.cancel_execution`."""
        route = self._calls.route(execution_id, channel_id, key_name)
        return self._run(self._calls.cancel(route, reason))

    def run_tool(
        self, channel_id: str, key_name: str | None = None, *, step: int | None = None,
        tool_name: str, params: Mapping[str, Any], fn: SyncToolFn,
        dedup_fields: Sequence[str] | None = None, lease_seconds: float = 60,
        retention_seconds: float = DEFAULT_RETENTION_S, effect: str = "external",
        reconcile: SyncReconcile | None = None, on_in_progress: InProgressPolicy = "raise",
        wait_timeout_s: float = DEFAULT_WAIT_TIMEOUT_S,
        retry_on: tuple[type[BaseException], ...] = DEFAULT_RETRY_ON,
    ) -> ToolRun:  # fmt: skip
        """Blocking twin of :meth:`LedgerClient.run_tool` for a sync ``fn``, with a heartbeat
        thread: see :func:`oncelog.producer.sync_executor.run_tool_sync`."""
        return run_tool_sync(
            self, channel_id, key_name, step=step, tool_name=tool_name, params=params, fn=fn,
            dedup_fields=dedup_fields, lease_seconds=lease_seconds,
            retention_seconds=retention_seconds, effect=effect, reconcile=reconcile,
            on_in_progress=on_in_progress, wait_timeout_s=wait_timeout_s, retry_on=retry_on,
        )  # fmt: skip
