"""``LedgerClient``: the async SDK.

async with LedgerClient() as client:          # reads ONCELOG_* settings
    claim = await client.claim_execution("run-42", "charge:4471", tool_name="charge",
                                         params={"order_id": "4471"})
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

from oncelog.producer.base import ClientBase, ExecutionRef
from oncelog.producer.calls import Call
from oncelog.producer.executor import (
    DEFAULT_RETRY_ON,
    DEFAULT_WAIT_TIMEOUT_S,
    AsyncReconcile,
    AsyncToolFn,
    InProgressPolicy,
    ToolRun,
    run_tool,
)
from oncelog.producer.protocol import DEFAULT_RETENTION_S
from oncelog.producer.results import Claim, Execution, Heartbeat

T = TypeVar("T")


class LedgerClient(ClientBase):
    """Claim, heartbeat, complete, fail, release and cancel executions, asynchronously.

    Every decision is read back from Kafka. Waits are bounded by ``timeouts``
    and raise :class:`~oncelog.errors.LedgerTimeoutError`.
    """

    async def __aenter__(self) -> Self:
        await asyncio.to_thread(self.open)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        await asyncio.to_thread(self.close)

    async def _run(self, call: Call[T]) -> T:
        if self._dispatcher is None:
            await asyncio.to_thread(self.open)
        assert self._dispatcher is not None
        request, interpret = call
        return interpret(await self._dispatcher.acall(request))

    async def claim_execution(
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
        """A new attempt at ``channel_id``/``key_name`` (or ``step``) with a fresh token."""
        return await self._run(
            self._calls.claim(
                channel_id, key_name, step, tool_name=tool_name, params=params,
                dedup_fields=dedup_fields, lease_seconds=lease_seconds,
                retention_seconds=retention_seconds, effect=effect,
            )
        )  # fmt: skip

    async def complete_execution(
        self, execution_id: ExecutionRef, claim_token: str, result: Any, *,
        channel_id: str | None = None, key_name: str | None = None,
    ) -> Execution:  # fmt: skip
        """Record the result. Fenced (:class:`StaleClaimError`) unless you hold the claim."""
        route = self._calls.route(execution_id, channel_id, key_name)
        return await self._run(self._calls.complete(route, claim_token, result))

    async def fail_execution(
        self, execution_id: ExecutionRef, claim_token: str, error: str, retryable: bool = False,
        *, channel_id: str | None = None, key_name: str | None = None,
    ) -> Execution:  # fmt: skip
        """Record a failure; a retryable one can be reclaimed at once."""
        route = self._calls.route(execution_id, channel_id, key_name)
        return await self._run(self._calls.fail(route, claim_token, error, retryable))

    async def heartbeat_execution(
        self, execution_id: ExecutionRef, claim_token: str, lease_seconds: float | None = None,
        *, channel_id: str | None = None, key_name: str | None = None,
    ) -> Heartbeat:  # fmt: skip
        """Extend the lease; the answer says whether a cancel was requested."""
        route = self._calls.route(execution_id, channel_id, key_name)
        return await self._run(self._calls.heartbeat(route, claim_token, lease_seconds))

    async def release_execution(
        self, execution_id: ExecutionRef, claim_token: str, *,
        channel_id: str | None = None, key_name: str | None = None,
    ) -> Execution:  # fmt: skip
        """Give the lease back without a result."""
        route = self._calls.route(execution_id, channel_id, key_name)
        return await self._run(self._calls.release(route, claim_token))

    async def get_execution(
        self, execution_id: ExecutionRef, *, channel_id: str | None = None,
        key_name: str | None = None,
    ) -> Execution | None:  # fmt: skip
        """The execution as decided after every request sent before this call; None if absent.

        It is a read through the log (a ``get`` request judged by the projector
        in order), not a lookup in a possibly lagging projection.
        """
        route = self._calls.route(execution_id, channel_id, key_name)
        return await self._run(self._calls.get(route))

    async def cancel_execution(
        self, execution_id: ExecutionRef, reason: str | None = None, *,
        channel_id: str | None = None, key_name: str | None = None,
    ) -> str:  # fmt: skip
        """Ask the holder to stop; returns the outcome (``cancel_requested`` or the state)."""
        route = self._calls.route(execution_id, channel_id, key_name)
        return await self._run(self._calls.cancel(route, reason))

    async def run_tool(
        self, channel_id: str, key_name: str | None = None, *, step: int | None = None,
        tool_name: str, params: Mapping[str, Any], fn: AsyncToolFn,
        dedup_fields: Sequence[str] | None = None, lease_seconds: float = 60,
        retention_seconds: float = DEFAULT_RETENTION_S, effect: str = "external",
        reconcile: AsyncReconcile | None = None, on_in_progress: InProgressPolicy = "raise",
        wait_timeout_s: float = DEFAULT_WAIT_TIMEOUT_S,
        retry_on: tuple[type[BaseException], ...] = DEFAULT_RETRY_ON,
    ) -> ToolRun:  # fmt: skip
        """Claim, run ``fn`` under a heartbeat, then complete or fail: see
        :func:`oncelog.producer.executor.run_tool`."""
        return await run_tool(
            self, channel_id, key_name, step=step, tool_name=tool_name, params=params, fn=fn,
            dedup_fields=dedup_fields, lease_seconds=lease_seconds,
            retention_seconds=retention_seconds, effect=effect, reconcile=reconcile,
            on_in_progress=on_in_progress, wait_timeout_s=wait_timeout_s, retry_on=retry_on,
        )  # fmt: skip
