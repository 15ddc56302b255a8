"""A held partition the consumer no longer fetches is found, and the consumer replaced.

The clock drill found it: after a leader moved, the projector held every partition and
polled, but never again fetched one of them; every request there went unanswered. A
paused partition is that state, made on purpose.
"""

from __future__ import annotations

import pytest
from confluent_kafka import TopicPartition

from oncelog.identity.partitioner import partition_for
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.stall_watch import StallWatch
from oncelog.projector.store import Store
from oncelog.settings import Settings
from tests.integration.conftest import FAST, start_projector

pytestmark = pytest.mark.kafka


def _channel_on(partition: int, partitions: int) -> str:
    return next(c for n in range(1000) if partition_for(c := f"c-{n}", partitions) == partition)


def test_a_partition_no_longer_fetched_is_found_and_its_requests_decided(
    topics: Settings,
) -> None:
    lines: list[str] = []
    channel = _channel_on(1, topics.partitions)
    watch = StallWatch(every_s=0.5, stall_s=3.0)
    with Store(topics.db_path) as store:
        running = start_projector(topics, store, on_rebalance=lines.append, stall_watch=watch)
        try:
            with SyncLedgerClient(topics, worker_id="w", timeouts=FAST) as client:
                assert (
                    client.claim_execution(channel, "before", tool_name="t", params={}).status
                    == "claimed"
                )
                consumer = running.projector.group.consumer
                assert consumer is not None
                consumer.pause([TopicPartition(topics.requests_topic, 1)])
                after = client.claim_execution(channel, "after", tool_name="t", params={})
                assert after.status == "claimed"
        finally:
            running.halt()
    assert any("rejoining the group after partition 1 not fetched" in line for line in lines)
