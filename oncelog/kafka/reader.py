"""Read a partition from an offset up to its high watermark, then stop.

"Caught up" is position >= high watermark, never "last offset == high - 1":
transaction markers and compaction leave offsets that are never delivered.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import stamina
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

if TYPE_CHECKING:
    from confluent_kafka.admin import TopicMetadata

from oncelog.errors import KafkaOperationError, LedgerTimeoutError, TopicMissingError
from oncelog.kafka.failures import (
    LoginWatch,
    is_authorization,
    is_unreachable,
    kafka_failure,
    no_answer,
)
from oncelog.kafka.logs import logged

_METADATA_TIMEOUT_S = 30.0
T = TypeVar("T")
# A topic created a moment ago answers these until its leaders are elected.
_LEADERLESS = frozenset(
    {
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        # A leader just elected answers this until it knows its high watermark.
        KafkaError.OFFSET_NOT_AVAILABLE,
        # The broker asked went out of the metadata (a node killed) while the question
        # was on its way: the partition's next leader answers.
        KafkaError._DESTROY_BROKER,
    }
)

# What the metadata of a topic that does not exist carries.
_UNKNOWN = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.UNKNOWN_TOPIC_ID})

# A leaderless partition right after a topic is created is retried, as expected; stamina
# logs each retry at WARNING. Without logging configured, Python's last-resort handler
# would print those on every CLI run; with it configured, they still reach its handlers.
logging.getLogger("stamina").addHandler(logging.NullHandler())


#: The throwaway groups of :func:`plain_consumer`. They never join or commit, but
#: librdkafka still looks their coordinator up, which needs DESCRIBE on the group.
READER_GROUP_PREFIX = "oncelog-reader-"


class WatchedConsumer(Consumer):
    """A consumer whose ``login`` heard a refused login or TLS failure, if any."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.login = LoginWatch()
        super().__init__({"error_cb": self.login, **config})


def plain_consumer(config: Mapping[str, Any]) -> Consumer:
    """A consumer that never commits and belongs to a throwaway group."""
    return WatchedConsumer(
        logged(
            {
                "group.id": f"{READER_GROUP_PREFIX}{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
                "log_level": 3,
                **config,
            }
        )
    )


def partition_count(
    consumer: Consumer,
    topic: str,
    *,
    timeout_s: float = _METADATA_TIMEOUT_S,
    bootstrap: str = "the bootstrap servers",
) -> int:
    """The number of partitions of ``topic``.

    Raises:
        BrokerUnreachableError: no broker answered at ``bootstrap`` within ``timeout_s``.
        KafkaAuthenticationError, KafkaTlsError: the login or the TLS handshake failed.
        TopicMissingError: the topic does not exist (or has no partitions).
    """
    what = f"reading the partitions of {topic}"
    try:
        meta = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
    except KafkaException as exc:
        if is_unreachable(exc):
            raise no_answer(what, bootstrap, timeout_s, exc, consumer) from exc
        raise kafka_failure(what, topic, exc) from exc
    error = None if meta is None else meta.error
    if error is not None and error.code() not in _UNKNOWN:
        # A denial (not_authorized), or a topic that exists but cannot be read just now.
        raise kafka_failure(what, topic, error)
    if meta is None or error is not None or not meta.partitions:
        raise TopicMissingError(
            f"topic {topic} does not exist or has no partitions: create the ledger's topics "
            "with `oncelog topics create` (with the same ONCELOG_TOPIC_PREFIX)"
        )
    return len(meta.partitions)


def high_watermarks(
    consumer: Consumer, topic: str, partitions: range | list[int]
) -> dict[int, int]:
    """The high watermark of each partition, read from the broker now."""
    return {p: watermarks(consumer, TopicPartition(topic, p))[1] for p in partitions}


def topic_ends(config: Mapping[str, Any], topic: str) -> dict[int, int]:
    """The high watermark of every partition of ``topic``, read now by a throwaway consumer.

    What a reader that must "catch up" waits for: each position >= its end.
    """
    consumer = plain_consumer(config)
    bootstrap = str(config.get("bootstrap.servers"))
    try:
        count = partition_count(consumer, topic, bootstrap=bootstrap)
        return high_watermarks(consumer, topic, range(count))
    finally:
        consumer.close()


def watermarks(consumer: Consumer, tp: TopicPartition) -> tuple[int, int]:
    """(low, high) of one partition, retrying while a new topic elects its leader."""

    def ask() -> tuple[int, int]:
        low, high = consumer.get_watermark_offsets(tp, timeout=_METADATA_TIMEOUT_S, cached=False)
        return low, high

    what = f"watermarks of {tp.topic}[{tp.partition}] unavailable"
    return _asking_until_led(consumer, tp.topic, what, ask, partition=tp.partition)


def offsets_at(consumer: Consumer, topic: str, partitions: int, at_ms: int) -> dict[int, int]:
    """Each partition's first offset whose timestamp is at or after ``at_ms`` (-1: none
    is), or with ``at_ms=-1`` its high watermark; in one ListOffsets request per broker,
    retried while a new topic elects its leaders."""
    asked = [TopicPartition(topic, p, at_ms) for p in range(partitions)]

    def ask() -> dict[int, int]:
        found = consumer.offsets_for_times(asked, timeout=_METADATA_TIMEOUT_S)
        # A partition whose leader is unknown (a broker outage, a partition that does not
        # exist) comes back with its own error and a meaningless offset: raised here, so
        # that it is retried like a call that failed whole, then typed.
        failed = next((tp.error for tp in found if tp.error is not None), None)
        if failed is not None:
            raise KafkaException(failed)
        return {tp.partition: tp.offset for tp in found}

    return _asking_until_led(consumer, topic, f"listing offsets of {topic}", ask)


def _asking_until_led(
    consumer: Consumer, topic: str, what: str, ask: Callable[[], T], *, partition: int = -1
) -> T:
    """``ask()``, retried while ``topic`` has no leader yet; errors named ``what``.

    Retried with a jittered exponential backoff (stamina), bounded in total by the
    metadata timeout, instead of asking again at once in a tight loop. ``partition``, the
    one ``ask`` reads if it reads one: librdkafka's "unknown partition" for it is retried
    too while the broker's metadata lists it (:func:`_partition_listed`).
    """

    def pending(exc: Exception) -> bool:
        if _leader_pending(exc):
            return True
        error = _kafka_error(exc)
        unknown = error is not None and error.code() == KafkaError._UNKNOWN_PARTITION
        return unknown and partition >= 0 and _partition_listed(consumer, topic, partition)

    try:
        for attempt in stamina.retry_context(
            on=pending,
            attempts=None,
            timeout=_METADATA_TIMEOUT_S,
            wait_initial=0.05,
            wait_max=1.0,
        ):
            with attempt:
                return ask()
    except KafkaException as exc:
        # An unauthorized topic looks like an unknown partition here: ask the metadata
        # (after the retries: a refresh while a leader is elected could replace a good
        # cached answer).
        denied = _denial(consumer, topic)
        raise kafka_failure(what, topic, denied or exc) from exc
    raise AssertionError("stamina retries until it returns or raises")  # pragma: no cover


def _leader_pending(exc: Exception) -> bool:
    """A watermark error worth asking again: retriable, or a partition without a leader yet."""
    error = _kafka_error(exc)
    return error is not None and (error.retriable() or error.code() in _LEADERLESS)


def _kafka_error(exc: Exception) -> KafkaError | None:
    """The librdkafka error a ``KafkaException`` carries, else None."""
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return error if isinstance(error, KafkaError) else None


def _partition_listed(consumer: Consumer, topic: str, partition: int) -> bool:
    """Whether fresh metadata lists ``partition`` of ``topic``, readable.

    librdkafka answers a partition missing from its own metadata with a local "unknown
    partition" (``_UNKNOWN_PARTITION``). That is final for a partition the topic does not
    have, and for a topic the ACLs hide (its metadata carries the denial, no partitions);
    but just after a network partition between brokers heals, a client's metadata can lack
    a partition the topic has, and asking again (this look refreshes it) finds it.
    """
    meta = _fresh_metadata(consumer, topic)
    return meta is not None and meta.error is None and partition in meta.partitions


def _fresh_metadata(consumer: Consumer, topic: str) -> TopicMetadata | None:
    """``topic``'s metadata asked of the broker now, or None (no answer, or no such topic)."""
    try:
        meta: TopicMetadata | None = consumer.list_topics(topic, timeout=5.0).topics.get(topic)
    except KafkaException:
        return None
    return meta


def _denial(consumer: Consumer, topic: str) -> KafkaError | None:
    """The metadata's authorization error for ``topic``, if the ACLs hide it."""
    meta = _fresh_metadata(consumer, topic)
    error: KafkaError | None = None if meta is None else meta.error
    return error if is_authorization(error) else None


def read_to_end(
    config: Mapping[str, Any],
    topic: str,
    partition: int,
    start: int = OFFSET_BEGINNING,
    *,
    timeout_s: float = 120.0,
    batch: int = 5000,
    until: Callable[[], bool] | None = None,
) -> Iterator[Message]:
    """Yield the records of one partition from ``start`` until the high watermark seen first.

    With ``until``, read on past that watermark while ``until()`` is false (it is asked
    after each record and each empty wait): a wait for a record known to be on its way.
    """
    consumer = plain_consumer(config)
    try:
        tp = TopicPartition(topic, partition)
        low, high = watermarks(consumer, tp)
        done = until or _already
        if max(low, start) >= high and done():
            return
        consumer.assign([TopicPartition(topic, partition, start)])
        deadline = time.monotonic() + timeout_s
        while _position(consumer, tp) < high or not done():
            if time.monotonic() > deadline:
                raise LedgerTimeoutError(
                    f"reading {topic}[{partition}] to offset {high} took over {timeout_s}s"
                    if _position(consumer, tp) < high
                    else f"reading {topic}[{partition}]: the record awaited past offset "
                    f"{high} did not arrive within {timeout_s}s"
                )
            for msg in consume_available(consumer, batch, 0.5):
                err = msg.error()
                if err is not None and err.code() != KafkaError._PARTITION_EOF:
                    where_ = f"reading {topic}[{partition}] at offset {msg.offset()}"
                    raise kafka_failure(where_, topic, err)
                if err is None:
                    yield msg
    finally:
        consumer.close()


def _already() -> bool:
    return True


def _position(consumer: Consumer, tp: TopicPartition) -> int:
    offset: int = consumer.position([tp])[0].offset
    # Before the first fetch the position is a logical value (negative): not caught up.
    return offset if offset >= 0 else -1


def where(msg: Message) -> tuple[int, int]:
    """(partition, offset) of a consumed or delivered record; both always set there."""
    partition, offset = msg.partition(), msg.offset()
    if partition is None or offset is None:
        raise KafkaOperationError(f"record of {msg.topic()} carries no position")
    return partition, offset


def consume_available(consumer: Consumer, max_messages: int, timeout_s: float) -> list[Message]:
    """Wait up to ``timeout_s`` for the first record, then take what is already fetched.

    ``Consumer.consume(n, timeout)`` waits until it has ``n`` records or the timeout
    passes, which adds the whole timeout to every small batch.
    """
    first = consumer.poll(timeout_s)
    if first is None:
        return []
    return [first, *consumer.consume(max_messages - 1, timeout=0)]
