"""Helpers for end-to-end tests: reading topics back, waiting out log time."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from oncelog.identity.partitioner import partition_for
from oncelog.kafka.reader import read_to_end, topic_ends
from oncelog.projector.service import Projector
from oncelog.schemas.codec import decode_decision, decode_request, decode_snapshot
from oncelog.schemas.models import Decision, ExecutionSnapshot
from oncelog.settings import Settings


def kafka(settings: Settings) -> dict[str, Any]:
    """librdkafka settings for the test's broker."""
    assert settings.bootstrap_servers is not None
    return settings.kafka_config(settings.bootstrap_servers)


def snapshots_of(settings: Settings, channel_id: str, operation_id: str) -> list[ExecutionSnapshot]:
    """Every snapshot published for one operation, in log order."""
    p = partition_for(channel_id, settings.partitions)
    out = []
    for msg in read_to_end(kafka(settings), settings.executions_topic, p):
        snap = decode_snapshot(msg.value() or b"")
        if snap.state.operation_id == operation_id:
            out.append(snap)
    return out


def decisions_on(settings: Settings, partition: int) -> list[Decision]:
    """Every decision published for the requests of one requests partition, in log order.

    Decisions go to their clients' reply partitions: all of them are read.
    """
    topic = settings.decisions_topic
    found = [
        decode_decision(m.value() or b"")
        for reply, end in topic_ends(kafka(settings), topic).items()
        if end > 0
        for m in read_to_end(kafka(settings), topic, reply)
    ]
    mine = [d for d in found if d.source_partition == partition]
    return sorted(mine, key=lambda d: d.source_offset)  # stable: a republished copy follows


def copies_by_source(
    settings: Settings, topic: str, decode: Callable[[bytes], Any]
) -> dict[tuple[int, int], list[tuple[int, bytes]]]:
    """Every copy published on ``topic`` for each source (partition, offset), in log order,
    as (partition, encoding): raw counts, so a republication shows as a second copy."""
    seen: dict[tuple[int, int], list[tuple[int, bytes]]] = defaultdict(list)
    for p in topic_ends(kafka(settings), topic):  # the decisions topic has its own count
        for msg in read_to_end(kafka(settings), topic, p, timeout_s=600):
            value = msg.value() or b""
            record = decode(value)
            seen[(record.source_partition, record.source_offset)].append((p, value))
    return seen


def wait_until_log_time_passes(log_ms: int) -> None:
    """Let wall time pass a lease deadline or an expiry (both are in broker time).

    This waits for time itself to pass, which is what a lease is about; it is
    not a synchronisation with another component.
    """
    delay = (log_ms - time.time() * 1000) / 1000 + 0.05
    if delay > 0:
        time.sleep(delay)


def wait_for_projection(
    projector: Projector, position: tuple[int, int] | None, timeout_s: float = 30
) -> None:
    """Wait until the projector has committed ``position`` to DuckDB (bounded).

    Decisions are published before the batch is committed, so a client can
    know an answer before the projection shows it. The wait is on the
    projector's committed position, not a poll of DuckDB.
    """
    assert position is not None
    partition, offset = position
    if not projector.wait_committed(partition, offset, timeout_s):
        raise AssertionError(f"projection did not pass {position} within {timeout_s}s")


def request_headers(settings: Settings, channel_id: str) -> dict[str, list[dict[str, bytes]]]:
    """The headers of each request record of ``channel_id``, by operation id, in log order."""
    found: dict[str, list[dict[str, bytes]]] = defaultdict(list)
    p = partition_for(channel_id, settings.partitions)
    for msg in read_to_end(kafka(settings), settings.requests_topic, p):
        request = decode_request(msg.value() or b"")
        if request.channel_id == channel_id:
            raw = msg.headers() or []
            pairs = raw.items() if isinstance(raw, dict) else raw
            found[request.operation_id].append(
                {
                    name: value.encode() if isinstance(value, str) else value or b""
                    for name, value in pairs
                }
            )
    return dict(found)
