"""Learn decisions from Kafka: the answer to each request, matched by request id.

A client reads ONE partition of the decisions topic, its reply partition
(chosen at start, see :mod:`oncelog.producer.reply_partition`), from the high
watermark it saw at start (an explicit offset, not "latest", which would
resolve lazily and could skip an early answer). Every request the client sends
names that partition. A waiter is registered *before* its request is sent.

A waiter is a :class:`concurrent.futures.Future` (the blocking client) or an
:class:`asyncio.Future` (the async client). Async waiters are settled on their
event loop, in one ``call_soon_threadsafe`` per loop and fetched batch: each
such call writes to the loop's self-pipe and wakes it, which costs more than
settling a whole batch once there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, InvalidStateError
from typing import Any

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

from oncelog.errors import CodecError
from oncelog.kafka.failures import kafka_failure
from oncelog.kafka.progress_watch import ProgressWatch
from oncelog.kafka.reader import consume_available, high_watermarks, partition_count, plain_consumer
from oncelog.producer import reply_partition
from oncelog.producer.clock import WALL_CLOCK
from oncelog.schemas.codec import decode_decision
from oncelog.schemas.models import Decision
from oncelog.tracing import active as tracing_active
from oncelog.tracing.propagation import traceparent_of

_LOG = logging.getLogger("oncelog.producer")
#: How long the loop's look at its partition's high watermark may take.
_LOOK_TIMEOUT_S = 5.0

Waiter = Future[Decision] | asyncio.Future[Decision]
Outcome = Decision | Exception


class DecisionListener:
    """A background consumer of ``<prefix>.decisions`` that resolves waiters."""

    def __init__(
        self,
        kafka: Mapping[str, Any],
        topic: str,
        *,
        reply_partition: int | None = None,
        rng: random.Random | None = None,
        requests_topic: str | None = None,
        connect_timeout_s: float = 30.0,
    ) -> None:
        self._kafka, self._connect_timeout_s = kafka, connect_timeout_s
        # The decisions topic read, and the requests topic whose partition count it reads.
        self._topic, self._requests_topic = topic, requests_topic
        self._pinned = reply_partition
        self._rng = rng or random.Random()
        self._waiters: dict[bytes, Waiter] = {}
        #: Tracing on: the ``traceparent`` a decision carried back, until its caller takes it.
        self._traces: dict[bytes, bytes] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._consumer: Consumer | None = None
        self.partitions = 0  # of the decisions topic
        self.request_partitions = 0  # of ``requests_topic``, when given
        self.reply_partition = -1  # chosen by start()
        #: Decision records consumed (its own and those of clients on the same partition).
        self.received = 0
        self._next_offset = -1  # of the reply partition: the next to read (the loop's)
        self._fetch_watch = ProgressWatch()
        self._look = threading.Event()  # asks the loop to look (look_for_stall)
        self.looks = 0  # how often the loop looked (the loop's)
        self.refetches = 0  # how often it read on with a new consumer (the loop's)

    def start(self) -> None:
        """Choose the reply partition, assign it at its current end and start consuming."""
        consumer = self._new_consumer()
        try:
            # The first question to the broker: one that does not answer is named here,
            # within the client's own timeout.
            bootstrap = str(self._kafka.get("bootstrap.servers"))
            self.partitions = partition_count(
                consumer, self._topic, timeout_s=self._connect_timeout_s, bootstrap=bootstrap
            )
            chosen = reply_partition.choose(
                consumer,
                self._topic,
                self.partitions,
                self._pinned,
                rng=self._rng,
                now_ms=WALL_CLOCK.now_ms(),
            )
            end = high_watermarks(consumer, self._topic, [chosen])[chosen]
            if self._requests_topic is not None:
                # Asked here: once the thread polls, a metadata call on the consumer waits.
                self.request_partitions = partition_count(consumer, self._requests_topic)
        except KafkaException as exc:
            # Whatever a call above left raw (a partition without a leader during an
            # outage): typed, so that opening a client never raises librdkafka's own.
            consumer.close()
            raise kafka_failure(f"starting to read {self._topic}", self._topic, exc) from exc
        except Exception:
            consumer.close()  # e.g. not_authorized on the decisions topic
            raise
        consumer.assign([TopicPartition(self._topic, chosen, end)])
        self.reply_partition, self._next_offset = chosen, end
        self._consumer = consumer
        self._thread = threading.Thread(target=self._loop, name="oncelog-decisions", daemon=True)
        self._thread.start()

    def expect(self, request_id: str) -> Future[Decision]:
        """The future decision of ``request_id`` for a blocking caller (the same on a re-send)."""
        key = request_id.encode()
        with self._lock:
            future = self._waiters.get(key)
            if not isinstance(future, Future):
                future = self._waiters[key] = Future()
            return future

    def expect_async(
        self, request_id: str, loop: asyncio.AbstractEventLoop
    ) -> asyncio.Future[Decision]:
        """The future decision of ``request_id``, settled on ``loop``."""
        future: asyncio.Future[Decision] = loop.create_future()
        with self._lock:
            self._waiters[request_id.encode()] = future
        return future

    @property
    def waiting(self) -> int:
        """How many calls of this client wait for a decision now."""
        return len(self._waiters)

    def settle(self, request_id: str, outcome: Outcome) -> None:
        """Settle ``request_id``'s waiter from any thread (a delivery denial, say)."""
        waiter = self._waiters.get(request_id.encode())
        if waiter is not None:
            deliver([(waiter, outcome)])

    def forget(self, request_id: str) -> None:
        """Stop waiting for ``request_id``."""
        key = request_id.encode()
        with self._lock:
            self._waiters.pop(key, None)
            self._traces.pop(key, None)

    def take_trace(self, request_id: str) -> bytes | None:
        """The ``traceparent`` the decision of ``request_id`` carried (tracing on), once."""
        with self._lock:
            return self._traces.pop(request_id.encode(), None)

    def close(self) -> None:
        """Stop the background consumer."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._consumer is not None:
            self._consumer.close()

    def look_for_stall(self) -> None:
        """Ask the loop to look whether it still reads its reply partition (a call timed
        out): librdkafka can hold a partition and fetch nothing more from it after its
        leader moved. Without waiting; the loop asks the broker on its own thread (no other
        thread may call a consumer it polls) and reads on with a new consumer once
        decisions have waited unread for the watch's stall time
        (:mod:`oncelog.kafka.progress_watch`). Off the hot path: only a timeout asks.
        """
        self._look.set()

    def _new_consumer(self) -> Consumer:
        # A long poll: the broker answers as soon as a decision lands, so a long wait costs
        # no latency, while a short one made every idle client fetch many times a second,
        # which cost the broker whole cores (docs/performance.md).
        return plain_consumer({**self._kafka, "fetch.wait.max.ms": 500})

    def _another_consumer(self) -> Consumer | None:
        """A new consumer for the look, or None when librdkafka could not make one: the look
        runs on the reader's thread, which an exception here would end."""
        try:
            return self._new_consumer()
        except KafkaException:
            return None

    def _looked(self, consumer: Consumer) -> Consumer:
        """The consumer to read on with: ``consumer``, or a new one from the next offset to
        read when decisions on the reply partition have waited unread for the stall time.

        A consumer that answers nothing may be cut off from every broker for good
        (librdkafka can drop them all after faults, docs/reliability.md), while a new client
        bootstraps again: a new one is asked then, and reads on if the stall is confirmed.
        None answering is an outage, not a stall; a new consumer that cannot be made is as
        one that does not answer, and the reader reads on with ``consumer`` (the stall is
        timed anew, the watch's rule) until a later look confirms it."""
        tp = TopicPartition(self._topic, self.reply_partition)
        high, fresh = _reply_end(consumer, tp), None
        if high is None:
            fresh = self._another_consumer()
            high = None if fresh is None else _reply_end(fresh, tp)
        self.looks += 1
        at = self._next_offset
        if high is None or not self._fetch_watch.stalled(at, high):
            if fresh is not None:
                _close(fresh)
            return consumer
        new = fresh if fresh is not None else self._another_consumer()
        if new is None:
            return consumer
        _LOG.warning(
            "oncelog: the client's reader of %s[%d] had left decisions unread for %.0fs "
            "(%d waiting%s); a new one reads on from offset %d",
            self._topic, self.reply_partition, self._fetch_watch.stall_s, high - at,
            "" if fresh is None else ", and it reached no broker", at,
        )  # fmt: skip
        new.assign([TopicPartition(self._topic, self.reply_partition, at)])
        self._consumer = new
        self.refetches += 1
        _close(consumer)
        return new

    def _loop(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        while not self._stop.is_set():
            if self._look.is_set():
                self._look.clear()
                consumer = self._looked(consumer)
            batch = consume_available(consumer, 2000, 0.05)
            if batch:
                self.received += len(batch)  # only this thread writes it
                offset = batch[-1].offset()  # None on an error event
                if offset is not None and offset >= 0:
                    self._next_offset = offset + 1
                deliver(self._answers(batch))

    def _answers(self, batch: Sequence[Message]) -> list[tuple[Waiter, Outcome]]:
        waiters = self._waiters
        answers: list[tuple[Waiter, Outcome]] = []
        traced = tracing_active()  # once a batch: with tracing off, no header is read
        for msg in batch:
            # A fetch error has no waiter under its key: librdkafka retries by itself.
            key = msg.key() or b""
            waiter = waiters.get(key)
            if waiter is None or waiter.done():  # decisions of others, or a duplicate
                continue
            if traced:
                self._keep_trace(key, msg)
            try:
                answers.append((waiter, decode_decision(msg.value() or b"")))
            except CodecError as exc:
                answers.append((waiter, exc))
        return answers

    def _keep_trace(self, key: bytes, msg: Message) -> None:
        # Kept before the answer is delivered, so the caller finds it once it wakes.
        traceparent = traceparent_of(msg.headers())
        if traceparent is not None:
            with self._lock:
                if key in self._waiters:  # not forgotten meanwhile: forget() drops it
                    self._traces[key] = traceparent


def _reply_end(consumer: Consumer, tp: TopicPartition) -> int | None:
    """The reply partition's high watermark, asked of the broker through ``consumer``;
    None when no broker answered it in time."""
    try:
        return int(consumer.get_watermark_offsets(tp, timeout=_LOOK_TIMEOUT_S, cached=False)[1])
    except KafkaException:
        return None


def _close(consumer: Consumer) -> None:
    with contextlib.suppress(KafkaException, RuntimeError):
        consumer.close()


def deliver(answers: Sequence[tuple[Waiter, Outcome]]) -> None:
    """Settle blocking waiters here, and async ones in one hand-off per event loop."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[Waiter, Outcome]]] = {}
    for answer in answers:
        waiter = answer[0]
        if isinstance(waiter, Future):
            _settle(waiter, answer[1])
            continue
        loop = waiter.get_loop()
        settled = by_loop.get(loop)
        if settled is None:
            settled = by_loop[loop] = []
        settled.append(answer)
    for loop, settled in by_loop.items():
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody is waiting
            loop.call_soon_threadsafe(_settle_all, settled)


def _settle_all(answers: Sequence[tuple[Waiter, Outcome]]) -> None:
    for waiter, outcome in answers:
        _settle(waiter, outcome)


def _settle(waiter: Waiter, outcome: Outcome) -> None:
    # The waiter may be settled already (a timeout, a cancelled async caller, a duplicate).
    # try/except, not contextlib.suppress: a suppress object per answer cost more than
    # the rest of the call.
    try:
        if isinstance(outcome, Exception):
            waiter.set_exception(outcome)
        else:
            waiter.set_result(outcome)
    except (InvalidStateError, asyncio.InvalidStateError):
        pass
