"""A partition whose leader the client cannot find (a broker outage, or one that does not
exist) is a typed error on the way a client starts, never a raw KafkaException nor a
meaningless offset taken for an answer."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from oncelog.errors import KafkaOperationError
from oncelog.kafka.reader import offsets_at, plain_consumer
from tests.conftest import BrokerSource


@pytest.mark.kafka
def test_listing_offsets_of_an_unknown_partition_is_a_typed_error(kafka: BrokerSource) -> None:
    bootstrap = kafka[0]
    topic = f"unknown-partition-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
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
