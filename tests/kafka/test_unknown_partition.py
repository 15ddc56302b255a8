"""A partition whose leader the client cannot find (a broker outage, or one that does not
exist) is a typed error on the way a client starts, never a raw KafkaException nor a
meaningless offset taken for an answer."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from oncelog.errors import KafkaOperationError
from oncelog.kafka.reader import _METADATA_TIMEOUT_S, offsets_at, plain_consumer, watermarks
from oncelog.waiting import poll_until
from tests.conftest import BrokerSource


def _new_topic(bootstrap: str, name: str) -> tuple[AdminClient, str]:
    """A fresh topic of one partition named after ``name``, and the admin that made it."""
    topic = f"{name}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    return admin, topic


@pytest.mark.kafka
def test_listing_offsets_of_an_unknown_partition_is_a_typed_error(kafka: BrokerSource) -> None:
    bootstrap = kafka[0]
    _, topic = _new_topic(bootstrap, "unknown-partition")
    consumer = plain_consumer({"bootstrap.servers": bootstrap})
    try:
        assert offsets_at(consumer, topic, 1, -1) == {0: 0}
        # Partition 0 answers, 1 and 2 have no leader: the whole answer is refused
        # (the partitions' own errors were read as "no record" before).
        for asked in (3, 2):
            with pytest.raises(KafkaOperationError) as failed:
                offsets_at(consumer, topic, asked, -1)
            assert not isinstance(failed.value, KafkaException)
            assert "Unknown partition" in str(failed.value)
            assert topic in str(failed.value)
    finally:
        consumer.close()


@pytest.mark.kafka
def test_a_partition_the_client_has_not_seen_yet_is_asked_again(kafka: BrokerSource) -> None:
    # A client's metadata can lack a partition the topic has (after a network partition
    # between brokers heals, as the fault drills met it on three nodes; here, a partition
    # added after the client first read the topic): librdkafka answers "unknown partition",
    # and asking again once the broker lists it finds the watermarks.
    bootstrap = kafka[0]
    admin, topic = _new_topic(bootstrap, "grown")
    consumer = plain_consumer(
        {"bootstrap.servers": bootstrap, "topic.metadata.refresh.interval.ms": 600_000}
    )
    try:
        assert watermarks(consumer, TopicPartition(topic, 0)) == (0, 0)
        admin.create_partitions([NewPartitions(topic, 2)])[topic].result(timeout=30)

        def broker_lists_both() -> bool:  # asked through the admin: the consumer stays behind
            return len(admin.list_topics(topic, timeout=5).topics[topic].partitions) == 2

        assert poll_until(time.monotonic() + 30, broker_lists_both)
        assert watermarks(consumer, TopicPartition(topic, 1)) == (0, 0)
    finally:
        consumer.close()


@pytest.mark.kafka
def test_a_partition_the_topic_lacks_is_refused_without_waiting(kafka: BrokerSource) -> None:
    bootstrap = kafka[0]
    _, topic = _new_topic(bootstrap, "one-partition")
    consumer = plain_consumer({"bootstrap.servers": bootstrap})
    try:
        began = time.monotonic()
        with pytest.raises(KafkaOperationError) as failed:
            watermarks(consumer, TopicPartition(topic, 3))
        assert "Unknown partition" in str(failed.value)
        # Not asked again until the metadata timeout runs out: the broker does not list it.
        assert time.monotonic() - began < _METADATA_TIMEOUT_S / 2
    finally:
        consumer.close()
