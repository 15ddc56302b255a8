"""Learn decisions from Kafka: the answer to each request, matched by request id.

Every client reads the decisions topic from the high watermarks it saw at start
(explicit offsets, not "latest", which would resolve lazily and could skip an
early answer). A waiter is registered *before* its request is sent.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from concurrent.futures import Future, InvalidStateError
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from oncelog.errors import CodecError
from oncelog.kafka.reader import consume_available, high_watermarks, partition_count, plain_consumer
from oncelog.schemas.codec import decode_decision
from oncelog.schemas.models import Decision


class DecisionListener:
    """A background consumer of ``<prefix>.decisions`` that resolves futures."""

    def __init__(self, kafka: Mapping[str, Any], topic: str) -> None:
        self._kafka = kafka
        self._topic = topic
        self._waiters: dict[bytes, Future[Decision]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._consumer: Consumer | None = None
        self.partitions = 0

    def start(self) -> None:
        """Assign every partition at its current end and start consuming."""
        consumer = plain_consumer({**self._kafka, "fetch.wait.max.ms": 5})
        try:
            self.partitions = partition_count(consumer, self._topic)
            ends = high_watermarks(consumer, self._topic, range(self.partitions))
        except Exception:
            consumer.close()  # e.g. not_authorized on the decisions topic
            raise
        consumer.assign([TopicPartition(self._topic, p, off) for p, off in ends.items()])
        self._consumer = consumer
        self._thread = threading.Thread(target=self._loop, name="oncelog-decisions", daemon=True)
        self._thread.start()

    def expect(self, request_id: str) -> Future[Decision]:
        """The future decision of ``request_id`` (the same future for a re-send)."""
        key = request_id.encode()
        with self._lock:
            future = self._waiters.get(key)
            if future is None:
                future = self._waiters[key] = Future()
            return future

    def forget(self, request_id: str) -> None:
        """Stop waiting for ``request_id``."""
        with self._lock:
            self._waiters.pop(request_id.encode(), None)

    def close(self) -> None:
        """Stop the background consumer."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._consumer is not None:
            self._consumer.close()

    def _loop(self) -> None:
        consumer = self._consumer
        assert consumer is not None
        while not self._stop.is_set():
            for msg in consume_available(consumer, 2000, 0.05):
                if msg.error() is not None:
                    continue  # transient fetch errors: librdkafka retries by itself
                future = self._waiters.get(msg.key() or b"")
                if future is None or future.done():
                    continue
                try:
                    decision = decode_decision(msg.value() or b"")
                except CodecError as exc:
                    _settle(future, exc)
                    continue
                _settle(future, decision)


def _settle(future: Future[Decision], outcome: Decision | Exception) -> None:
    # The waiter may have been cancelled (an async caller gave up) in the meantime.
    with contextlib.suppress(InvalidStateError):
        if isinstance(outcome, Exception):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)
