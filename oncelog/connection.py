"""``oncelog.connect()``: a client on the configured broker, else on the local one.

The SDK itself only talks to ``ONCELOG_BOOTSTRAP_SERVERS``; finding the embedded
broker that ``oncelog broker start`` runs is the job of this edge, so that the
SDK never imports the broker launcher (and its Java, jars and processes).
"""

from __future__ import annotations

from typing import TypedDict, Unpack

from oncelog.broker.local import resolve_bootstrap
from oncelog.producer.client import LedgerClient
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings


def with_bootstrap(settings: Settings | None = None) -> Settings:
    """``settings`` (default: from ``ONCELOG_*``) with a broker address filled in.

    A configured ``bootstrap_servers`` is kept as it is; otherwise the running
    local broker's address is used, and :class:`~oncelog.errors.BrokerError`
    says to start it when none runs.
    """
    settings = settings or Settings()
    if settings.bootstrap_servers:
        return settings
    return settings.model_copy(update={"bootstrap_servers": resolve_bootstrap(settings)})


class ClientOptions(TypedDict, total=False):
    """What :func:`connect` and :func:`connect_sync` pass on to the client they make."""

    worker_id: str | None
    timeouts: Timeouts | None
    reply_partition: int | None


def connect(settings: Settings | None = None, **options: Unpack[ClientOptions]) -> LedgerClient:
    """An async client (not yet open) on the configured or the local broker."""
    return LedgerClient(with_bootstrap(settings), **options)


def connect_sync(
    settings: Settings | None = None, **options: Unpack[ClientOptions]
) -> SyncLedgerClient:
    """A blocking client (not yet open) on the configured or the local broker."""
    return SyncLedgerClient(with_bootstrap(settings), **options)
