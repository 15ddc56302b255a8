"""A projector left holding no partition rejoins the group by itself and folds again.

A CI run of the broker-restart drill once ended with a projector that heard
``lost (session expired): [0, 1, 2]`` and never got an assignment back: it folded
nothing more. Here the same state is forced on a real broker: the projector hears the
loss of every partition, and librdkafka, which did not lose them, never rejoins.
"""

from __future__ import annotations

import threading
import time

import pytest

from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.service import Projector
from oncelog.projector.store import Store
from oncelog.settings import Settings
from oncelog.waiting import poll_until
from tests.integration.conftest import FAST

pytestmark = pytest.mark.kafka

SESSION_TIMEOUT_MS = 1500
MARGIN_S = 1.0
ASSIGN_TIMEOUT_S = 60.0


def _run_until_assigned(projector: Projector, lines: list[str]) -> None:
    def assigned() -> bool:
        if any(line.endswith("assigned: [0, 1, 2]") for line in lines):
            return True
        projector.run_once()  # a poll of the group: it waits itself
        return False

    deadline = time.monotonic() + ASSIGN_TIMEOUT_S
    assert poll_until(deadline, assigned, pause_s=0), f"not assigned in time: {lines}"


def test_a_projector_that_lost_its_partitions_for_good_rejoins(topics: Settings) -> None:
    settings = topics.model_copy(update={"group_session_timeout_ms": SESSION_TIMEOUT_MS})
    assert settings.bootstrap_servers is not None
    lines: list[str] = []
    with Store(settings.db_path) as store:
        projector = Projector(
            settings, settings.bootstrap_servers, store,
            on_rebalance=lines.append, unassigned_margin_s=MARGIN_S,
        )  # fmt: skip
        projector.start()
        stop = threading.Event()
        thread = threading.Thread(target=projector.run, args=(stop,), daemon=True)
        try:
            _run_until_assigned(projector, lines)
            consumer = projector.group.consumer
            assert consumer is not None
            # The projector's own thread (this one, until the run starts) hears the loss;
            # the coordinator still gives the partitions to this member, so no rebalance
            # ever brings them back.
            projector.assignment.on_lost(consumer, consumer.assignment())
            assert lines[-1].endswith("lost (session expired): [0, 1, 2]")
            thread.start()
            with SyncLedgerClient(settings, worker_id="w", timeouts=FAST) as client:
                claim = client.claim_execution("c", "after-the-loss", tool_name="t", params={})
            assert claim.status == "claimed"
        finally:
            stop.set()
            if thread.ident is not None:
                thread.join(timeout=30)
            projector.close()
    rejoined = [line for line in lines if "rejoining the group after" in line]
    assert len(rejoined) == 1
    assert "without partitions: the group assigns partitions [0, 1, 2]" in rejoined[0]
    after = lines[lines.index(rejoined[0]) :]
    assert any(line.endswith("assigned: [0, 1, 2]") for line in after)
