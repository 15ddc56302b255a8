"""A fatal consumer error (a static member fenced after a coordinator failover) is survived.

The failover drill found it: after two of three brokers died together, the group
coordinator's new home fenced the projector's consumer (``FENCED_INSTANCE_ID``, fatal in
librdkafka) and the projector folded nothing more until restarted by hand.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Message

from oncelog.errors import KafkaOperationError
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.group_consumer import fatal_error
from oncelog.projector.service import Projector
from oncelog.projector.store import Store
from oncelog.settings import Settings
from tests.integration.conftest import FAST, start_projector


def test_a_fatal_error_among_the_polled_records_is_found() -> None:
    # As librdkafka hands a fenced consumer's error over: a record with code _FATAL,
    # fatal() false, no partition (confluentinc/confluent-kafka-python#869).
    fenced = KafkaError(KafkaError._FATAL, "Static consumer fenced")
    polled = [Message(topic="t", partition=0, offset=1, value=b"v"), Message(error=fenced)]
    assert fatal_error(polled) is fenced
    eof = Message(error=KafkaError(KafkaError._PARTITION_EOF, "eof"), partition=0)
    assert fatal_error([eof, Message(topic="t", partition=0, offset=2)]) is None


@pytest.mark.kafka
def test_a_fatal_consumer_error_rejoins_the_group_and_keeps_deciding(topics: Settings) -> None:
    lines: list[str] = []
    with Store(topics.db_path) as store:
        running = start_projector(topics, store, on_rebalance=lines.append)
        try:
            with SyncLedgerClient(topics, worker_id="w", timeouts=FAST) as client:
                first = client.claim_execution("c", "before", tool_name="t", params={})
                assert first.status == "claimed"
                fenced = KafkaError(KafkaError.FENCED_INSTANCE_ID, "fenced", fatal=True)
                running.projector.group.on_consumer_error(fenced)  # as librdkafka reports it
                second = client.claim_execution("c", "after", tool_name="t", params={})
                assert second.status == "claimed"
                again = client.claim_execution("c", "before", tool_name="t", params={})
                assert again.status == "in_progress"  # the state before the rejoin is kept
        finally:
            running.halt()
    assert any("rejoining the group after a fatal consumer error" in line for line in lines)
    assert sum(line.endswith("assigned: [0, 1, 2]") for line in lines) == 2


@pytest.mark.kafka
def test_a_transient_consumer_error_changes_nothing(topics: Settings) -> None:
    lines: list[str] = []
    with Store(topics.db_path) as store:
        running = start_projector(topics, store, on_rebalance=lines.append)
        try:
            running.projector.group.on_consumer_error(KafkaError(KafkaError._TRANSPORT, "down"))
            with SyncLedgerClient(topics, worker_id="w", timeouts=FAST) as client:
                claim = client.claim_execution("c", "k", tool_name="t", params={})
                assert claim.status == "claimed"
        finally:
            running.halt()
    assert not any("rejoining" in line for line in lines)


@pytest.mark.kafka
def test_fenced_again_and_again_stops_and_names_the_projector_id(topics: Settings) -> None:
    # Another process with the same ONCELOG_PROJECTOR_ID fences this one at every rejoin:
    # rejoining forever would fence it in turn, so the fourth fence within a minute stops.
    fenced = KafkaError(KafkaError.FENCED_INSTANCE_ID, "fenced", fatal=True)
    with Store(topics.db_path) as store:
        projector = Projector(topics, topics.bootstrap_servers or "", store)
        projector.start()
        try:
            for _ in range(3):
                projector.group.on_consumer_error(fenced)
                assert projector.run_once() == 0  # rejoined with a new consumer
            projector.group.on_consumer_error(fenced)
            with pytest.raises(KafkaOperationError, match="ONCELOG_PROJECTOR_ID") as caught:
                projector.run_once()
            assert caught.value.code == "kafka_error"
        finally:
            projector.close()
