"""Answers go where their client listens (docs/spec.md §3), on a real broker.

Each client reads one partition of the decisions topic and names it in every
request; it gets every answer, and never another client's.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import Producer

from oncelog.identity.ids import operation_id
from oncelog.identity.partitioner import partition_for
from oncelog.kafka.reader import read_to_end, topic_ends
from oncelog.producer.dispatch import Dispatcher, Timeouts
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.schemas.codec import decode_decision, encode_request
from oncelog.schemas.models import Get, Request
from oncelog.settings import Settings
from tests.integration.conftest import RunningProjector
from tests.integration.helpers import kafka

# No re-send within a test: each request gets exactly one decision.
ONCE = Timeouts(total_s=60.0, resend_after_s=60.0)
CYCLES = 4


def _cycles(client: SyncLedgerClient, channel: str) -> set[str]:
    """Claim and complete CYCLES fresh steps; the request ids of the answers."""
    answered = set()
    for step in range(CYCLES):
        claim = client.claim_execution(channel, f"step:{step}", tool_name="t", params={"n": step})
        assert claim.status == "claimed"
        done = client.complete_execution(claim.execution.id, claim.claim_token, {"n": step})
        assert done.status == "completed"
        answered |= {claim.execution.id}
    return answered


def _dispatcher(client: SyncLedgerClient) -> Dispatcher:
    transport = client.transport
    assert isinstance(transport, Dispatcher)
    return transport


def _decisions_by_partition(settings: Settings) -> dict[int, list[Any]]:
    topic = settings.decisions_topic
    return {
        p: [decode_decision(m.value() or b"") for m in read_to_end(kafka(settings), topic, p)]
        for p, end in topic_ends(kafka(settings), topic).items()
        if end > 0
    }


def test_each_client_reads_only_its_reply_partition_and_gets_every_answer(
    projector: RunningProjector, topics: Settings
) -> None:
    assert topics.reply_partitions == 32 != topics.partitions  # the defaults differ
    with (
        SyncLedgerClient(topics, timeouts=ONCE, reply_partition=5) as first,
        SyncLedgerClient(topics, timeouts=ONCE, reply_partition=17) as second,
    ):
        ops = {5: _cycles(first, "run-a"), 17: _cycles(second, "run-b")}
        for client, mine in ((first, 5), (second, 17)):
            assert _dispatcher(client).reply_partition == mine
            # Its own 2 * CYCLES answers and nothing else: the other's went elsewhere.
            assert _dispatcher(client).decisions_received == 2 * CYCLES
    published = _decisions_by_partition(topics)
    assert set(published) == {5, 17}
    for p, decisions in published.items():
        assert len(decisions) == 2 * CYCLES
        assert {d.operation_id for d in decisions} == ops[p]


def test_a_starting_client_picks_the_one_quiet_reply_partition(
    projector: RunningProjector, topics: Settings
) -> None:
    """Every reply partition but one had a decision lately: each starting client picks it.

    A uniform pick would pass once in 32; three clients, once in 32,768.
    """
    quiet = 29  # above every requests partition: no sweep's default-rule answer lands here
    assert topics.partitions <= quiet < topics.reply_partitions
    channel = "run-busy"
    source = partition_for(channel, topics.partitions)
    busy = [p for p in range(topics.reply_partitions) if p != quiet]
    producer = Producer(kafka(topics))
    for p in busy:
        request = Request(
            f"busy-{p}", operation_id(channel, f"k{p}"), channel, f"k{p}", None, Get(), p
        )
        producer.produce(
            topics.requests_topic, encode_request(request), request.operation_id.encode(), source
        )
    assert producer.flush(30) == 0
    with SyncLedgerClient(topics, timeouts=ONCE, reply_partition=busy[0]) as client:
        # A read through the log after them: once it is answered, so are they.
        client.get_execution(operation_id(channel, "after"), channel_id=channel, key_name="after")
    assert set(_decisions_by_partition(topics)) == set(busy)
    for _ in range(3):
        with SyncLedgerClient(topics, timeouts=ONCE) as starting:
            assert _dispatcher(starting).reply_partition == quiet


def test_a_request_naming_no_or_a_missing_reply_partition_is_answered_by_the_default_rule(
    projector: RunningProjector, topics: Settings
) -> None:
    """Old writers and sweeps name none; a bad writer names one that does not exist:
    the decision goes to the request's partition mod the reply partitions, deterministically."""
    channel = "run-raw"
    source = partition_for(channel, topics.partitions)
    requests = [
        Request(f"raw-{i}", operation_id(channel, f"k{i}"), channel, f"k{i}", None, Get(), reply)
        for i, reply in enumerate((None, 32, -3, 2**31 - 1))
    ]
    producer = Producer(kafka(topics))
    for request in requests:
        value = encode_request(request)
        producer.produce(topics.requests_topic, value, request.operation_id.encode(), source)
    assert producer.flush(30) == 0
    with SyncLedgerClient(topics, timeouts=ONCE, reply_partition=source) as client:
        # A read through the log after them: once it is answered, so are they.
        client.get_execution(operation_id(channel, "after"), channel_id=channel, key_name="after")
    published = _decisions_by_partition(topics)
    answered = {d.request_id for d in published[source % topics.reply_partitions]}
    assert {r.request_id for r in requests} <= answered
    assert set(published) == {source % topics.reply_partitions}
