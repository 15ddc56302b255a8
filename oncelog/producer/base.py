"""What the async and the sync client share: settings, transport, routes, receipts."""

from __future__ import annotations

import asyncio

from oncelog.errors import ConfigError
from oncelog.producer import calls
from oncelog.producer.calls import RECEIPT_TTL_S, RequestBuilder
from oncelog.producer.clock import WALL_CLOCK, Clock
from oncelog.producer.dispatch import Dispatcher, Timeouts
from oncelog.producer.results import Execution
from oncelog.producer.transport import Transport
from oncelog.receipts import receipt_key
from oncelog.schemas.models import ApproverKey, Request
from oncelog.settings import Settings
from oncelog.tracing.calls import CallSpan


class ClientBase:
    """The connection half of a client; subclasses add the calls, async or blocking.

    ``transport`` defaults to Kafka (a :class:`~oncelog.producer.dispatch.Dispatcher`
    made on :meth:`open`, closed on :meth:`close`); a given transport, such as
    :class:`oncelog.testing.InMemoryLedger`, belongs to the caller and is not closed here.
    ``reply_partition`` pins the partition of the decisions topic the Kafka transport
    listens on (default ``ONCELOG_REPLY_PARTITION``, else a quiet one chosen at start).
    """

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        worker_id: str | None = None,
        timeouts: Timeouts | None = None,
        transport: Transport | None = None,
        reply_partition: int | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self._reply_partition = reply_partition
        approvers = tuple(ApproverKey(*a) for a in self.settings.approver_list())
        self.requests = RequestBuilder(worker_id, approvers)
        self._timeouts = timeouts or Timeouts(connect_s=self.settings.connect_timeout_s)
        self._given = transport
        self._transport: Transport | None = transport

    @property
    def worker_id(self) -> str:
        """The holder name this client claims with."""
        return self.requests.worker_id

    @property
    def clock(self) -> Clock:
        """The clock leases are judged by on this client's transport."""
        return WALL_CLOCK if self._transport is None else self._transport.clock

    @property
    def transport(self) -> Transport:
        """The open transport (blocking: opens it on first use)."""
        self.open()
        assert self._transport is not None
        return self._transport

    async def opened(self) -> Transport:
        """The open transport; on first use it is opened on a worker thread."""
        if self._transport is None:
            await asyncio.to_thread(self.open)
        assert self._transport is not None
        return self._transport

    def open(self) -> None:
        """Connect (blocking): the configured broker and start reading decisions."""
        if self._transport is None:
            dispatcher = Dispatcher(
                self.settings,
                _bootstrap(self.settings),
                self._timeouts,
                reply_partition=self._reply_partition,
                settle_abandoned=True,
            )
            dispatcher.start()
            self._transport = dispatcher

    def close(self) -> None:
        """Disconnect (blocking); a transport the caller gave stays open."""
        if self._transport is not None and self._transport is not self._given:
            self._transport.close()
            self._transport = None

    def traced(self, request: Request) -> CallSpan:
        """The span of a call sending ``request`` (tracing on: see :mod:`oncelog.tracing`)."""
        settings = self.settings
        return CallSpan(request, settings.requests_topic, payloads=settings.trace_payloads)

    def receipt(self, execution: Execution, *, ttl_seconds: float = RECEIPT_TTL_S) -> str:
        """A signed receipt of a completed execution; the key comes from settings.

        Re-presenting the same completed execution re-derives the same receipt
        (its expiry is ``completed_at + ttl``). Verify it with
        :func:`oncelog.verify_receipt`, which needs no ledger lookup.
        """
        key = receipt_key(self.settings)
        return calls.receipt(execution, key, ttl_seconds, self.clock.now_ms())


def _bootstrap(settings: Settings) -> str:
    # The SDK does not look for the local broker: oncelog.connect() does, at the edge.
    if not settings.bootstrap_servers:
        raise ConfigError(
            "no broker configured: set ONCELOG_BOOTSTRAP_SERVERS, or use oncelog.connect(), "
            "which finds the local broker that `oncelog broker start` runs"
        )
    return settings.bootstrap_servers
