"""Requests written straight to a requests topic, for the archive tests."""

from __future__ import annotations

from confluent_kafka import Producer

from oncelog.schemas.codec import encode_request
from oncelog.schemas.models import Claim, Effect, Request
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics


def claim(i: int) -> Request:
    """The ``i``-th claim of the tests: its own operation, tool ``tool-<i>``."""
    body = Claim(f"tool-{i}", b'{"i":%d}' % i, f"h{i}", 30_000, 60_000, Effect.EXTERNAL, "w1")
    return Request(f"r{i}", f"op{i}", "ch", f"k{i}", f"t{i}", body)


def create(settings: Settings, partitions: int = 2) -> None:
    """The ledger's topics, ``partitions`` of each sharded one."""
    bootstrap = str(settings.bootstrap_servers)
    create_topics(admin_client(settings, bootstrap), ledger_topics(settings, partitions))


def produce(settings: Settings, first: int, count: int, partition: int = 0) -> list[bytes]:
    """Write claims ``first .. first+count-1`` to one partition; their value bytes."""
    producer = Producer({"bootstrap.servers": settings.bootstrap_servers, "acks": "all"})
    values = [encode_request(claim(i)) for i in range(first, first + count)]
    for i, value in enumerate(values, start=first):
        producer.produce(settings.requests_topic, value, key=f"op{i}", partition=partition)
    assert producer.flush(30) == 0
    return values
