"""A client stuck while the cluster is healthy is mended by a call that times out, and its
calls are answered again (a real broker and projector).

What the network drill met after cuts between three brokers: an idempotent producer's
partition that sends nothing more until message.timeout.ms, and a reader of the reply
partition that fetches nothing more, while new clients get on at once. Here the producer
is built against an address where no broker listens (the cluster "heals" when its
configuration names the real one again), and the reader's consumer hands on nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from oncelog.errors import LedgerTimeoutError
from oncelog.kafka.progress_watch import ProgressWatch
from oncelog.kafka.reader import consume_available, topic_ends
from oncelog.producer import listener as listener_module
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings
from oncelog.waiting import poll_until
from tests.integration.conftest import FAST, RunningProjector

pytestmark = pytest.mark.kafka

NOWHERE = "127.0.0.1:1"
SHORT = Timeouts(total_s=1.0, resend_after_s=0.5)
STALL_S = 60.0


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _mended_then_answered(client: SyncLedgerClient) -> None:
    """The next call times out and mends the client; the one after it is answered (given
    the time a new Kafka client takes to connect)."""
    with pytest.raises(LedgerTimeoutError):
        client.claim_execution("order-2", "charge", tool_name="charge", params={})
    transport = client._transport
    transport.timeouts = FAST  # type: ignore[union-attr]
    again = client.claim_execution("order-3", "charge", tool_name="charge", params={})
    assert again.status == "claimed"


def _unread(topics: Settings, listener: listener_module.DecisionListener) -> bool | None:
    """Wait (bounded) until a decision is on the listener's reply partition, unread."""
    config = topics.kafka_config(topics.bootstrap_servers or "")
    return poll_until(
        time.monotonic() + 30,
        lambda: (
            topic_ends(config, topics.decisions_topic)[listener.reply_partition]
            > listener._next_offset
            or None
        ),
    )


def test_a_stuck_producer_is_renewed_when_a_call_times_out(
    projector: RunningProjector, topics: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    assert topics.bootstrap_servers is not None
    clock = _Clock()
    with SyncLedgerClient(topics, timeouts=SHORT) as client:
        transport = client._transport
        assert transport is not None
        sender = transport._sender  # type: ignore[attr-defined]
        sender._watch = ProgressWatch(STALL_S, clock)
        for lane in (sender.express, sender.batched):
            lane._config["bootstrap.servers"] = NOWHERE  # connected lazily: at the first send
        with pytest.raises(LedgerTimeoutError):
            client.claim_execution("order-1", "charge", tool_name="charge", params={})
        assert not sender.stalled()  # held, but not for long yet
        for lane in (sender.express, sender.batched):
            lane._config["bootstrap.servers"] = topics.bootstrap_servers  # the cluster heals
        clock.now = STALL_S
        with caplog.at_level(logging.WARNING, logger="oncelog.producer"):
            _mended_then_answered(client)
        assert "held requests undelivered for 60s; a new one took the" in caplog.text
        sender.flush(30)  # the held requests were delivered too
        assert sender.acknowledged()


def _stuck_listener(
    client: SyncLedgerClient, clock: _Clock, monkeypatch: pytest.MonkeyPatch, answers: bool
) -> listener_module.DecisionListener:
    """The client's listener, its stall watch on ``clock``: its consumer hands nothing on
    (its fetches go nowhere) and answers the look's question only if ``answers``; a new
    consumer reads as it should."""
    transport = client._transport
    assert transport is not None
    listener: listener_module.DecisionListener = transport._listener  # type: ignore[attr-defined]
    listener._fetch_watch = ProgressWatch(STALL_S, clock)
    stuck = listener._consumer
    fetch, end = consume_available, listener_module._reply_end

    def stuck_fetch(consumer: Consumer, most: int, timeout_s: float) -> list[Message]:
        fetched = fetch(consumer, most, timeout_s)
        return [] if consumer is stuck else fetched

    def stuck_end(consumer: Consumer, tp: TopicPartition) -> int | None:
        return None if consumer is stuck and not answers else end(consumer, tp)

    monkeypatch.setattr(listener_module, "consume_available", stuck_fetch)
    monkeypatch.setattr(listener_module, "_reply_end", stuck_end)
    return listener


def _left_unread(
    client: SyncLedgerClient, listener: listener_module.DecisionListener, topics: Settings
) -> None:
    """A call times out (the reader's first look); its decision waits unread on the reply
    partition, and a second look, as a timed-out call asks, sees it: not for long yet."""
    with pytest.raises(LedgerTimeoutError):
        client.claim_execution("order-1", "charge", tool_name="charge", params={})
    assert poll_until(time.monotonic() + 30, lambda: listener.looks == 1)
    assert _unread(topics, listener)
    listener.look_for_stall()
    assert poll_until(time.monotonic() + 30, lambda: listener.looks == 2)
    assert listener.refetches == 0


# answers=False: what the network drill met once, a consumer with no broker left that
# answers the look no question either, so that it cannot tell a stall through it.
READERS = pytest.mark.parametrize(
    "answers", [True, False], ids=["still-answering", "cut-off-from-every-broker"]
)


@READERS
def test_a_reader_that_stopped_fetching_is_replaced_when_a_call_times_out(
    projector: RunningProjector,
    topics: Settings,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    answers: bool,
) -> None:
    clock = _Clock()
    with SyncLedgerClient(topics, timeouts=SHORT) as client:
        listener = _stuck_listener(client, clock, monkeypatch, answers)
        _left_unread(client, listener, topics)
        clock.now = STALL_S
        with caplog.at_level(logging.WARNING, logger="oncelog.producer"):
            _mended_then_answered(client)
        assert listener.refetches == 1
        assert "had left decisions unread for 60s" in caplog.text
        assert ("and it reached no broker" in caplog.text) is not answers


@READERS
def test_a_look_that_cannot_make_a_consumer_leaves_the_reader_reading(
    projector: RunningProjector, topics: Settings, monkeypatch: pytest.MonkeyPatch, answers: bool
) -> None:
    clock = _Clock()
    with SyncLedgerClient(topics, timeouts=SHORT) as client:
        listener = _stuck_listener(client, clock, monkeypatch, answers)
        made: Callable[[], Consumer] = listener._new_consumer
        broken = [True]

        def unmakeable() -> Consumer:
            if broken:  # librdkafka out of resources, say
                raise KafkaException(KafkaError(KafkaError._FAIL))
            return made()

        monkeypatch.setattr(listener, "_new_consumer", unmakeable)
        _left_unread(client, listener, topics)
        clock.now = STALL_S  # stalled: a new consumer is wanted, and none can be made
        listener.look_for_stall()
        assert poll_until(time.monotonic() + 30, lambda: listener.looks == 3)
        assert listener.refetches == 0
        assert listener._thread is not None
        assert listener._thread.is_alive()
        broken.clear()  # one can be made again; the stall is timed anew
        listener.look_for_stall()
        assert poll_until(time.monotonic() + 30, lambda: listener.looks == 4)
        assert listener.refetches == 0
        clock.now = 2 * STALL_S
        _mended_then_answered(client)
        assert listener.refetches == 1
