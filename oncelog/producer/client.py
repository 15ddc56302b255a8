"""The SDK: ``LedgerClient`` (async) and ``SyncLedgerClient`` (blocking).

async with LedgerClient() as client:          # reads ONCELOG_* settings
    claim = await client.claim_execution("run-42", "charge:4471", tool_name="charge",
                                         params={"order_id": "4471"})

Every call is written once, in :class:`~oncelog.producer.calls.RequestBuilder`, and
listed once, in :class:`ClientCalls`: a :class:`ClientCall` is an async method on a
``LedgerClient`` (:func:`awaiting`) and a blocking one on a ``SyncLedgerClient``
(:func:`blocking`). An operation of several requests (a fork, an adoption, a tool run) is
written once as a plan (:mod:`oncelog.producer.ledger_plan`) and listed as a
:class:`ClientPlan`, which each client runs with its driver.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from types import MethodType
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload

from oncelog import tracing
from oncelog.producer import forks, ledger_plan
from oncelog.producer.base import ClientBase
from oncelog.producer.calls import PendingCall, RequestBuilder
from oncelog.producer.ledger_plan import LedgerPlan, adrive, drive

P = ParamSpec("P")
T = TypeVar("T")


def awaiting(
    build: Callable[Concatenate[RequestBuilder, P], PendingCall[T]],
) -> Callable[Concatenate[LedgerClient, P], Awaitable[T]]:
    """An async client method from a request builder: send, await, interpret."""

    @functools.wraps(build)
    async def method(self: LedgerClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        pending = build(self.requests, *args, **kwargs)
        transport = await self.opened()
        if not tracing.active():
            return pending.interpret(await transport.acall(pending.request))
        with self.traced(pending.request) as span:
            decision = await transport.acall(pending.request)
            return pending.interpret(span.decided(decision))

    return method


def blocking(
    build: Callable[Concatenate[RequestBuilder, P], PendingCall[T]],
) -> Callable[Concatenate[SyncLedgerClient, P], T]:
    """A blocking client method from a request builder: send, wait, interpret."""

    @functools.wraps(build)
    def method(self: SyncLedgerClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
        pending = build(self.requests, *args, **kwargs)
        transport = self.transport
        if not tracing.active():
            return pending.interpret(transport.call(pending.request))
        with self.traced(pending.request) as span:
            decision = transport.call(pending.request)
            return pending.interpret(span.decided(decision))

    return method


class ClientCall(Generic[P, T]):
    """One ledger call, bound the way the client reading it calls: awaited on a
    :class:`LedgerClient`, blocking on a :class:`SyncLedgerClient`.

    ``__get__`` is overloaded on the client's type, so a type checker sees each
    client's exact signature although the call is declared once.
    """

    def __init__(self, build: Callable[Concatenate[RequestBuilder, P], PendingCall[T]]) -> None:
        # Both methods are made once, here, not on every attribute access.
        self._awaiting = awaiting(build)
        self._blocking = blocking(build)
        self.__doc__ = build.__doc__  # help() shows the builder's doc

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Self: ...
    @overload
    def __get__(self, client: LedgerClient, owner: type[Any]) -> Callable[P, Awaitable[T]]: ...
    @overload
    def __get__(self, client: SyncLedgerClient, owner: type[Any]) -> Callable[P, T]: ...
    def __get__(self, client: ClientCalls | None, owner: type[Any]) -> Any:
        if client is None:
            return self
        if isinstance(client, LedgerClient):
            return MethodType(self._awaiting, client)
        return MethodType(self._blocking, client)


class ClientPlan(ClientCall[P, T]):
    """An operation of several requests, declared once as a plan
    (:mod:`oncelog.producer.ledger_plan`): awaited on a :class:`LedgerClient`, blocking on
    a :class:`SyncLedgerClient`."""

    def __init__(self, make: Callable[P, LedgerPlan[T]]) -> None:
        @functools.wraps(make)
        async def awaited(client: LedgerClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
            return await adrive(make(*args, **kwargs), client)

        @functools.wraps(make)
        def blocked(client: SyncLedgerClient, /, *args: P.args, **kwargs: P.kwargs) -> T:
            return drive(make(*args, **kwargs), client)

        self._awaiting, self._blocking = awaited, blocked
        self.__doc__ = make.__doc__


class ClientCalls(ClientBase):
    """The calls both clients make, listed once (see :class:`ClientCall`)."""

    claim_execution = ClientCall(RequestBuilder.claim_execution)
    complete_execution = ClientCall(RequestBuilder.complete_execution)
    fail_execution = ClientCall(RequestBuilder.fail_execution)
    heartbeat_execution = ClientCall(RequestBuilder.heartbeat_execution)
    release_execution = ClientCall(RequestBuilder.release_execution)
    get_execution = ClientCall(RequestBuilder.get_execution)
    cancel_execution = ClientCall(RequestBuilder.cancel_execution)
    decide_approval = ClientCall(RequestBuilder.decide_approval)
    fork_channel = ClientPlan(forks.fork_channel)
    channel_executions = ClientPlan(forks.channel_executions)
    adopt_execution = ClientPlan(forks.adopt_execution)
    run_tool = ClientPlan(ledger_plan.run_tool)


class LedgerClient(ClientCalls):
    """Claim, heartbeat, complete, fail, release and cancel executions, asynchronously.

    Every decision is read back from the log. Waits are bounded by ``timeouts``
    and raise :class:`~oncelog.errors.LedgerTimeoutError`. The same calls,
    blocking, are :class:`~oncelog.producer.sync_client.SyncLedgerClient`'s.
    """

    async def __aenter__(self) -> Self:
        await asyncio.to_thread(self.open)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await asyncio.to_thread(self.close)


class SyncLedgerClient(ClientCalls):
    """Claim, heartbeat, complete, fail, release and cancel executions, blocking.

    Every decision is read back from the log. Waits are bounded by ``timeouts``
    and raise :class:`~oncelog.errors.LedgerTimeoutError`.
    """

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
