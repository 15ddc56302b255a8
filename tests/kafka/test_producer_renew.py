"""A producer that stopped delivering is renewed: the new client sends what the old one
held, in its order, and nothing is lost (a real broker)."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from oncelog.errors import ConfigError
from oncelog.kafka.producer import FutureProducer
from oncelog.kafka.reader import read_to_end
from tests.conftest import BrokerSource

NOWHERE = "127.0.0.1:1"  # a client that never delivers: what a stuck one looks like
RECORDS = 500


@pytest.mark.kafka
def test_a_renewed_producer_delivers_what_the_stuck_one_held_in_order(
    kafka: BrokerSource,
) -> None:
    bootstrap = kafka[0]
    topic = f"renew-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(timeout=30)
    stuck = FutureProducer(
        {"bootstrap.servers": NOWHERE, "message.timeout.ms": 600_000}, error_reports_only=True
    )
    try:
        for i in range(RECORDS):
            stuck.send_nowait(topic, i % 2, b"k", str(i).encode(), [("n", str(i).encode())])
        assert stuck.wait(0.5) == RECORDS  # none leaves
        assert stuck.settled() == 0
        # The renewed client reaches the broker (the old one was stuck; its cluster healed).
        stuck._config["bootstrap.servers"] = bootstrap
        assert stuck.renew() == RECORDS
        stuck.send_nowait(topic, 0, b"k", b"after")  # after the moved ones, on the new client
        stuck.flush(30)
        assert stuck.settled() == RECORDS + 1
    finally:
        stuck.close()
    consumer_conf = {"bootstrap.servers": bootstrap}
    for p in (0, 1):
        values = [m.value() for m in read_to_end(consumer_conf, topic, p)]
        wanted = [str(i).encode() for i in range(p, RECORDS, 2)] + ([b"after"] if p == 0 else [])
        assert values == wanted
    first = next(iter(read_to_end(consumer_conf, topic, 1)))
    assert first.headers() == [("n", b"1")]


def test_only_a_producer_without_futures_is_renewed() -> None:
    with pytest.raises(ConfigError, match="error_reports_only"):
        FutureProducer({"bootstrap.servers": NOWHERE}).renew()
