"""Fill a requests topic with valid synthetic requests, fast, for the benchmarks."""

from __future__ import annotations

import uuid

from confluent_kafka import Producer

from oncelog.identity import canonical_json, ids
from oncelog.identity.partitioner import partition_for
from oncelog.schemas.codec import encode_request
from oncelog.schemas.models import Claim, Complete, Effect, Heartbeat, Request
from oncelog.settings import Settings

_PER_OP = 4  # claim, heartbeat, complete, and a replayed claim


def _requests(channel: str, key: str) -> list[Request]:
    op = ids.operation_id(channel, key)
    params = canonical_json.canonical_json({"channel": channel, "key": key})
    request_hash = ids.request_hash("tool", {"channel": channel, "key": key})
    token = uuid.uuid4().hex
    claim = Claim("tool", params, request_hash, 60_000, 86_400_000, Effect.EXTERNAL, "bench")
    return [
        Request(uuid.uuid4().hex, op, channel, key, token, claim),
        Request(uuid.uuid4().hex, op, channel, key, token, Heartbeat(None)),
        Request(uuid.uuid4().hex, op, channel, key, token, Complete(b'{"ok":true}')),
        Request(uuid.uuid4().hex, op, channel, key, uuid.uuid4().hex, claim),
    ]


def claim_complete(channel: str, key: str) -> list[Request]:
    """A claim of a fresh operation and its holder's completion (one bench cycle)."""
    claim, _, complete, _ = _requests(channel, key)
    return [claim, complete]


def produce_requests(settings: Settings, total: int) -> int:
    """Write ``total`` requests (whole lifecycles, in order per operation); return the count."""
    assert settings.bootstrap_servers is not None
    producer = Producer(
        {**settings.kafka_config(settings.bootstrap_servers), "linger.ms": 50,
         "batch.num.messages": 10_000, "queue.buffering.max.messages": 500_000,
         "compression.type": "lz4", "enable.idempotence": True}
    )  # fmt: skip
    written = 0
    i = 0
    while written < total:
        channel = f"bench-run-{i // 6}"
        partition = partition_for(channel, settings.partitions)
        for request in _requests(channel, f"step-{i % 6}")[: total - written]:
            value = encode_request(request)
            while True:
                try:
                    producer.produce(settings.requests_topic, value, request.operation_id.encode(),
                                     partition=partition)  # fmt: skip
                    break
                except BufferError:
                    producer.poll(0.1)
            written += 1
        i += 1
    producer.flush(120)
    return written
