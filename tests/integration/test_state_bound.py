"""A projector whose state cache holds two states still decides as if it held them all."""

from __future__ import annotations

import pytest

from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.store import Store
from oncelog.settings import Settings
from tests.integration.conftest import FAST, start_projector

pytestmark = pytest.mark.kafka


def test_evicted_states_are_reloaded_from_duckdb(topics: Settings) -> None:
    store = Store(topics.db_path)
    running = start_projector(topics, store, max_states=2)
    try:
        with SyncLedgerClient(topics, timeouts=FAST) as client:
            claims = [
                client.claim_execution("run-b", f"step-{i}", tool_name="t", params={"i": i})
                for i in range(8)
            ]
            assert [c.status for c in claims] == ["claimed"] * 8
            for i, claim in enumerate(claims):
                done = client.complete_execution(claim.execution.id, claim.claim_token, {"r": i})
                assert done.status == "completed"
            for i in range(8):
                again = client.claim_execution("run-b", f"step-{i}", tool_name="t", params={"i": i})
                assert again.status == "replayed"
                assert again.result == {"r": i}
    finally:
        running.halt()
        store.close()
