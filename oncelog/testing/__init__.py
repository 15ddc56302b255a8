"""Test your agent code without Kafka: an in-process ledger on a clock you move.

    from oncelog.testing import InMemoryLedger

    ledger = InMemoryLedger()
    with ledger.sync_client() as client:
        claim = client.claim_execution("run-1", "charge:1", tool_name="charge", params={})
        ledger.advance(61)                      # past the 60 s lease, instantly
        ...

Requests go through the real codec, validation and fold, so what the test sees
is what Kafka and the projector would decide.
"""

from __future__ import annotations

from oncelog.testing.clock import ManualClock
from oncelog.testing.ledger import InMemoryLedger, LoggedRequest

__all__ = ["InMemoryLedger", "LoggedRequest", "ManualClock"]
