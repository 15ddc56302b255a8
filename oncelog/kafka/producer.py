"""A thin, lazy, idempotent producer whose deliveries are futures.

Delivery reports are served by a background poll thread, so both the sync and
the async client can wait on them. A failed delivery fails its own future and is
also raised by the next ``send`` call, so no error goes unnoticed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from oncelog.errors import ConfigError, KafkaOperationError
from oncelog.kafka.failures import kafka_failure
from oncelog.kafka.logs import logged
from oncelog.kafka.reader import where
from oncelog.waiting import poll_until

Delivery = tuple[int, int]  # (partition, offset)
_PURGED = frozenset({KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT})
Headers = Sequence[tuple[str, bytes]]

#: What the ledger's promise rests on: a record is acknowledged once every in-sync replica
#: has it (at least ``min.insync.replicas``), and a retried send never writes it twice nor
#: out of order. ``ONCELOG_KAFKA_EXTRA_CONFIG`` may not weaken them.
DURABILITY: Mapping[str, Any] = {"acks": "all", "enable.idempotence": True}
_ACKS_ALL = frozenset({"all", "-1", -1})

#: Idempotent and fully acknowledged. linger.ms=0 measured best for claim latency. One
#: produce request in flight per broker: what queues while it is out goes in the next
#: one, so concurrent callers share requests (a lone caller waits for nobody). The
#: broker pays CPU per request; with idempotence's default of 5 in flight, each worker's
#: record went in a request of its own (docs/performance.md, "Choices and what they
#: bought").
DEFAULT_PRODUCER_CONFIG: Mapping[str, Any] = {
    **DURABILITY,
    "linger.ms": 0,
    "max.in.flight.requests.per.connection": 1,
    "compression.type": "lz4",
    # Records up to the topics' max.message.bytes (4 MiB); librdkafka's default is 1 MB.
    "message.max.bytes": 4 * 1024 * 1024 + 65536,
    "log_level": 3,
    # A request is appended within this long of its send, or fails: the fold's retry
    # memory (RETRY_MEMORY_MS) covers a client's call timeout plus this. librdkafka's default.
    "message.timeout.ms": 300_000,
}


def producer_config(
    config: Mapping[str, Any], extra_config: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The defaults, then ``config``, then ``extra_config``; ConfigError when the result
    would acknowledge before every in-sync replica has a record, or without idempotence."""
    merged = {**DEFAULT_PRODUCER_CONFIG, **config, **(extra_config or {})}
    acks = [merged[k] for k in ("acks", "request.required.acks") if k in merged]  # aliases
    idempotent = str(merged.get("enable.idempotence")).lower() == "true"
    if any(a not in _ACKS_ALL for a in acks) or not idempotent:
        raise ConfigError(
            f"the ledger's producers need acks=all and enable.idempotence=true, got "
            f"acks={acks}, enable.idempotence={merged.get('enable.idempotence')!r} "
            "(check ONCELOG_KAFKA_EXTRA_CONFIG)"
        )
    return merged


def _flush(producer: Producer) -> object:
    return producer.flush(0.1)


def _poll(producer: Producer) -> object:
    return producer.poll(0.1)


def delivery_error(topic: str, partition: int, err: KafkaError | Exception) -> KafkaOperationError:
    """A delivery failure, naming where the record was going (``not_authorized`` on ACLs)."""
    return kafka_failure(f"delivery to {topic}[{partition}] failed", topic, err)


class FutureProducer:
    """Produce records and get a :class:`Future` of their (partition, offset)."""

    def __init__(
        self,
        config: Mapping[str, Any],
        extra_config: Mapping[str, Any] | None = None,
        *,
        error_reports_only: bool = False,
        on_error: Callable[[Message, KafkaOperationError], None] | None = None,
    ) -> None:
        """``on_error`` (with ``error_reports_only``) also hears of each failed record."""
        self._on_error = on_error
        self._config = producer_config(config, extra_config)
        if error_reports_only:
            self._config["delivery.report.only.error"] = True
            self._config["on_delivery"] = self._on_error_report
        self._producer: Producer | None = None
        self._lock = threading.Lock()
        # Held around each produce and while the client is renewed: no record goes to a
        # client being replaced, and the moved ones precede every later one.
        self._produce_lock = threading.Lock()
        self._pause = threading.Event()  # asks the poll thread to leave the client alone
        self._paused = threading.Event()
        # Collected while renewing: each record with its headers (a delivery report
        # does not carry them back).
        self._purged: list[tuple[Message, Headers | None]] | None = None
        self._sent = 0  # records queued since the start, by this object
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self._pending_error: KafkaOperationError | None = None

    @property
    def config(self) -> Mapping[str, Any]:
        """The librdkafka configuration this producer is built with (acks=all, idempotent)."""
        return dict(self._config)

    def _client(self) -> Producer:
        with self._lock:
            if self._stop.is_set():
                raise KafkaOperationError("the producer is closed")
            if self._producer is None:
                self._producer = Producer(logged(self._config))
                self._poller = threading.Thread(
                    target=self._poll_loop, name="oncelog-producer-poll", daemon=True
                )
                self._poller.start()
            return self._producer

    def _poll_loop(self) -> None:
        while not self._stop.is_set():
            producer = self._producer
            if self._pause.is_set() or producer is None:
                self._paused.set()
                self._stop.wait(0.01)
                continue
            self._paused.clear()
            producer.poll(0.05)

    def send(
        self,
        topic: str,
        partition: int,
        key: bytes,
        value: bytes | None,
        headers: Headers | None = None,
    ) -> Future[Delivery]:
        """Queue one record (None: a tombstone); raise the last delivery error first, if
        one is pending."""
        self.raise_pending()
        future: Future[Delivery] = Future()

        def on_delivery(err: KafkaError | None, msg: Message) -> None:
            if err is not None:
                exc = delivery_error(topic, partition, err)
                self._pending_error = exc
                future.set_exception(exc)
            else:
                future.set_result(where(msg))

        self._produce(topic, partition, key, value, headers, drain=_flush, on_delivery=on_delivery)
        return future

    def send_nowait(
        self, topic: str, partition: int, key: bytes, value: bytes, headers: Headers | None = None
    ) -> None:
        """Queue one record without a future: its failure is raised by a later call.

        With ``error_reports_only`` no Python callback runs for a successful
        delivery, which is what a high-rate publisher wants; :meth:`flush` then
        tells that everything queued so far was acknowledged.
        """
        self.raise_pending()
        report = None
        if headers and self._config.get("on_delivery") is not None:

            def report(err: KafkaError | None, msg: Message) -> None:
                self._on_error_report(err, msg, headers)

        self._produce(topic, partition, key, value, headers, drain=_poll, on_delivery=report)

    def _produce(
        self,
        topic: str,
        partition: int,
        key: bytes,
        value: bytes | None,
        headers: Headers | None,
        *,
        drain: Callable[[Producer], object],
        on_delivery: Callable[[KafkaError | None, Message], None] | None = None,
    ) -> None:
        """Queue one record, draining with ``drain`` while the local queue is full."""
        while True:
            try:
                with self._produce_lock:
                    producer = self._client()
                    producer.produce(
                        topic,
                        value,
                        key,
                        partition=partition,
                        headers=list(headers) if headers else None,
                        on_delivery=on_delivery,
                    )
                    self._sent += 1
                return
            except BufferError:
                drain(producer)  # the local queue is full: let deliveries drain
            except KafkaException as exc:
                raise delivery_error(topic, partition, exc) from exc

    def queued(self) -> int:
        """Records queued or in flight, not yet acknowledged (0 before the first send)."""
        producer = self._producer
        return 0 if producer is None else len(producer)

    def settled(self) -> int:
        """Records no longer queued nor in flight (acknowledged, or failed with an error
        that waits to be raised): it grows while deliveries are made."""
        return self._sent - self.queued()

    def sent(self) -> int:
        """Records queued since the start (those a renewal moved count once)."""
        return self._sent

    def wait(self, timeout_s: float) -> int:
        """Wait up to ``timeout_s`` for the queued records; return how many are still
        queued or in flight (raise a pending delivery error first)."""
        producer = self._producer
        left = 0 if producer is None else int(producer.flush(timeout_s))
        self.raise_pending()
        return left

    @property
    def failed(self) -> bool:
        """Whether a failed delivery waits to be raised (by the next send or flush)."""
        return self._pending_error is not None

    def raise_pending(self) -> None:
        """Raise the delivery error a failed record left, if any (once)."""
        if self._pending_error is not None:
            error, self._pending_error = self._pending_error, None
            raise error

    def _on_error_report(
        self, err: KafkaError | None, msg: Message, headers: Headers | None = None
    ) -> None:
        purged = self._purged
        if purged is not None and err is not None and err.code() in _PURGED:
            purged.append((msg, headers))  # renew() sends it again, with the new client
            return
        if err is not None:
            partition = msg.partition()  # 0 is a partition, not a missing one
            error = delivery_error(msg.topic() or "?", -1 if partition is None else partition, err)
            self._pending_error = error
            if self._on_error is not None:
                self._on_error(msg, error)

    def renew(self) -> int:
        """Give the records the librdkafka client still holds, in order, to a new client
        (a new producer id); return how many moved. For a client stuck while the cluster
        is healthy (see :data:`oncelog.projector.publisher.PUBLISH_STALL_S`). A record the
        old one had in flight may be appended twice, byte-identical, as after a restart.
        Only with ``error_reports_only`` (records without a future)."""
        if self._config.get("on_delivery") is None:
            raise ConfigError("renew() needs a producer built with error_reports_only")
        with self._produce_lock:
            old = self._producer
            if old is None:
                return 0
            self._pause.set()
            try:
                self._paused.wait(timeout=5)
                moved = self._purge(old)
                new = Producer(logged(self._config))
                _produce_again(new, moved)
                with self._lock:
                    self._producer = new
            finally:
                self._pause.clear()
        return len(moved)

    def _purge(self, old: Producer) -> list[tuple[Message, Headers | None]]:
        """Every record ``old`` holds, in its order, taken back through its reports."""
        self._purged = []
        try:
            old.purge(in_queue=True, in_flight=True, blocking=False)
            poll_until(time.monotonic() + 10, lambda: _drained(old), pause_s=0)
            return self._purged
        finally:
            self._purged = None

    def flush(self, timeout_s: float) -> None:
        """Wait for every queued record; raise a pending delivery error."""
        if self._producer is not None:
            left = self._producer.flush(timeout_s)
            if left:
                raise KafkaOperationError(f"{left} records still undelivered after {timeout_s}s")
        self.raise_pending()

    @staticmethod
    def _flush_to_close(producer: Producer, timeout_s: float) -> None:
        try:
            producer.flush(timeout_s)
        except KafkaException as exc:
            left = len(producer)
            if left:
                raise KafkaOperationError(
                    f"closing the producer with {left} records undelivered: {exc}"
                ) from exc

    def close(self, timeout_s: float = 10.0) -> None:
        """Flush what is queued, stop the poll thread, then release the client.

        Releasing it closes its connections now: a handle left to the garbage
        collector keeps reconnecting to a broker that may be gone. A client in a
        fatal state (say, denied an idempotent producer id) has already failed
        every record it held through its future or pending error: closing it then
        raises only if records are still queued, as a typed error.
        """
        try:
            if self._producer is not None:
                self._flush_to_close(self._producer, timeout_s)
        finally:
            with self._lock:
                self._stop.set()
            if self._poller is not None:
                self._poller.join(timeout=5)
            self._producer = None


def _produce_again(producer: Producer, records: list[tuple[Message, Headers | None]]) -> None:
    """Queue ``records`` (taken back from another client) on ``producer``, in order."""
    for msg, headers in records:
        partition = msg.partition()
        producer.produce(msg.topic() or "", msg.value(), msg.key(),
                         partition=-1 if partition is None else partition,  # always chosen
                         headers=list(headers) if headers else None)  # fmt: skip


def _drained(producer: Producer) -> bool:
    """Serve ``producer``'s reports a moment; True once it holds no record."""
    producer.poll(0.05)
    return len(producer) == 0
