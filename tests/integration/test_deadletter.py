"""Poison records go to the dead-letter topic with their position; the partition flows on."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import Producer

from oncelog.identity import ids
from oncelog.identity.partitioner import partition_for
from oncelog.schemas.codec import encode_request
from oncelog.schemas.models import Claim, Effect, Request
from oncelog.settings import Settings
from tests.integration.conftest import RunningProjector
from tests.integration.helpers import kafka, wait_for_projection

pytestmark = pytest.mark.kafka


def test_malformed_records_are_dead_lettered_and_later_requests_decided(
    client: Any, topics: Settings, projector: RunningProjector
) -> None:
    from oncelog.kafka.reader import read_to_end  # noqa: PLC0415

    channel = "run-dlq"
    p = partition_for(channel, topics.partitions)
    op = ids.operation_id(channel, "k")
    impossible = Request(
        "req-bad-lease", op, channel, "k", "tok",
        Claim("tool", b"{}", "0" * 64, -5, 1000, Effect.EXTERNAL, "w"),
    )  # fmt: skip
    producer = Producer(kafka(topics))
    delivered: list[tuple[int, int]] = []

    def on_delivery(err: Any, msg: Any) -> None:
        assert err is None
        delivered.append((msg.partition(), msg.offset()))

    for value in (b"\x00garbage", b"\xc3\x01" + b"\x00" * 8, encode_request(impossible)):
        producer.produce(
            topics.requests_topic, value, op.encode(), partition=p, on_delivery=on_delivery
        )
    assert producer.flush(10) == 0

    claim = client.claim_execution(channel, "k2", tool_name="tool", params={})
    assert claim.status == "claimed"
    # The answer can come before the dead letters are acknowledged (they follow the
    # decisions): wait on the committed position, which is published and flushed.
    wait_for_projection(projector.projector, claim.execution.position)

    dead = list(read_to_end(kafka(topics), topics.deadletter_topic, p))
    assert len(dead) == 3
    for msg, (partition, offset) in zip(dead, delivered, strict=True):
        headers = dict(msg.headers() or [])
        assert headers["source_partition"] == str(partition).encode()
        assert headers["source_offset"] == str(offset).encode()
        assert headers["source_topic"] == topics.requests_topic.encode()
    codes = [dict(m.headers() or [])["error_code"] for m in dead]
    assert codes == [b"codec_error", b"codec_error", b"invalid_request"]
    rows = (
        projector.store.cursor()
        .execute('SELECT "offset", code FROM dead_letters ORDER BY "offset"')
        .fetchall()
    )
    assert [r[0] for r in rows] == [o for _, o in delivered]
