"""What the async and the sync client share: settings, connection, routes, receipts."""

from __future__ import annotations

import time

from oncelog.errors import ConfigError
from oncelog.producer import calls
from oncelog.producer.calls import RECEIPT_TTL_S, Calls
from oncelog.producer.dispatch import Dispatcher, Timeouts
from oncelog.producer.results import Execution
from oncelog.receipts import receipt_key
from oncelog.settings import Settings

ExecutionRef = str | Execution


class ClientBase:
    """The connection half of a client; subclasses add the calls, async or blocking."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        worker_id: str | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        self.settings = settings or Settings()
        self._calls = Calls(worker_id)
        self._timeouts = timeouts or Timeouts()
        self._dispatcher: Dispatcher | None = None

    @property
    def worker_id(self) -> str:
        """The holder name this client claims with."""
        return self._calls.worker_id

    def open(self) -> None:
        """Connect (blocking) to the configured broker and start reading decisions."""
        if self._dispatcher is None:
            dispatcher = Dispatcher(self.settings, _bootstrap(self.settings), self._timeouts)
            dispatcher.start()
            self._dispatcher = dispatcher

    def close(self) -> None:
        """Disconnect (blocking)."""
        if self._dispatcher is not None:
            self._dispatcher.close()
            self._dispatcher = None

    def receipt(self, execution: Execution, *, ttl_seconds: float = RECEIPT_TTL_S) -> str:
        """A signed receipt of a completed execution; the key comes from settings.

        Re-presenting the same completed execution re-derives the same receipt
        (its expiry is ``completed_at + ttl``). Verify it with
        :func:`oncelog.verify_receipt`, which needs no ledger lookup.
        """
        key = receipt_key(self.settings)
        return calls.receipt(execution, key, ttl_seconds, time.time_ns() // 1_000_000)


def _bootstrap(settings: Settings) -> str:
    # The SDK does not look for the local broker: oncelog.connect() does, at the edge.
    if not settings.bootstrap_servers:
        raise ConfigError(
            "no broker configured: set ONCELOG_BOOTSTRAP_SERVERS, or use oncelog.connect(), "
            "which finds the local broker that `oncelog broker start` runs"
        )
    return settings.bootstrap_servers
