"""``SyncLedgerClient``, the blocking SDK: defined beside the async one, in
:mod:`oncelog.producer.client`."""

from __future__ import annotations

from oncelog.producer.client import SyncLedgerClient, blocking

__all__ = ["SyncLedgerClient", "blocking"]
