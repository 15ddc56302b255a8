"""The projector's consumer in its group: join, hear a fatal error, rejoin with a new one.

A static member whose consumer is fenced (``FENCED_INSTANCE_ID`` after a coordinator
failover, fatal in librdkafka) folds nothing more until it joins again: it drops the
consumer and its partitions and joins with a new one, which replaces the old member and
resumes from DuckDB's positions. Fenced again and again within a minute means another
process runs with the same projector id: it stops and says so. The same replacement
serves a projector left holding no partition (:meth:`.Assignment.rejoin_reason`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message

from oncelog.errors import KafkaOperationError
from oncelog.kafka.logs import logged
from oncelog.projector.assignment import Assignment
from oncelog.projector.membership import group_id, member_client_id
from oncelog.settings import Settings

#: More rejoins than this within the window: not a coordinator failover, a duplicate id.
MAX_REJOINS = 3
REJOIN_WINDOW_S = 60.0


def is_fatal(error: KafkaError) -> bool:
    """Whether the consumer is dead: it must be replaced."""
    # A consumer's fatal error arrives as code _FATAL with fatal() false
    # (confluentinc/confluent-kafka-python#869); an event may set fatal() instead.
    return error.fatal() or error.code() == KafkaError._FATAL


def fatal_error(messages: list[Message]) -> KafkaError | None:
    """The fatal error among a poll's records, if any. It must be looked for before the
    records of released partitions are dropped: it carries no partition."""
    for msg in messages:
        error = msg.error()
        if error is not None and is_fatal(error):
            return error
    return None


def group_config(settings: Settings) -> dict[str, object]:
    """The projectors' consumer group: one member per ``projector_id``, cooperative."""
    session_ms = settings.group_session_timeout_ms
    return {
        "group.id": group_id(settings),
        # Static membership: a restarted projector replaces its dead self at once
        # instead of waiting out the session timeout of the old member.
        "group.instance.id": settings.projector_id,
        "client.id": member_client_id(settings),  # carries the query URL (query.owners)
        # Cooperative: a rebalance moves only the partitions that change owner; the
        # others keep folding (an eager one would stop and restart every member).
        "partition.assignment.strategy": "cooperative-sticky",
        # Cut off (or silent) for this long, the member loses its partitions and stops
        # publishing for them; it rejoins by itself once the network heals.
        "session.timeout.ms": session_ms,
        "heartbeat.interval.ms": max(100, min(3000, session_ms // 3)),
        # librdkafka's default, stated: a projector that does not poll for this long leaves
        # the group and another takes its partitions. The folding thread polls between
        # batches; only a rebalance callback waits for a commit (and so for publishing,
        # Publisher.flush): an outage that long costs a rejoin, nothing else.
        "max.poll.interval.ms": 300_000,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        # A long poll: answered as soon as a request lands, and an idle projector does not
        # fetch 100 times a second.
        "fetch.wait.max.ms": 500,
        "log_level": 3,
    }


class GroupConsumer:
    """One consumer at a time, subscribed with ``assignment``'s rebalance callbacks."""

    def __init__(
        self,
        settings: Settings,
        kafka: Mapping[str, Any],
        assignment: Assignment,
        report: Callable[[str], None] | None,
    ) -> None:
        """``report`` hears a line when the consumer is replaced (``serve`` prints it)."""
        self._settings = settings
        self._kafka = kafka
        self._assignment = assignment
        self._report = report
        self.consumer: Consumer | None = None
        self._fatal: KafkaError | None = None  # the consumer's, heard by on_consumer_error
        self._rejoins: list[float] = []  # monotonic times of the recent rejoins

    def join(self) -> Consumer:
        """A new consumer, subscribed: it joins the group at its first poll."""
        config = {**self._kafka, **group_config(self._settings)}
        consumer = Consumer(logged({**config, "error_cb": self.on_consumer_error}))
        consumer.subscribe(
            [self._settings.requests_topic],
            on_assign=self._assignment.on_assign,
            on_revoke=self._assignment.on_revoke,
            on_lost=self._assignment.on_lost,
        )
        return consumer

    def on_consumer_error(self, error: KafkaError) -> None:
        """The consumer's ``error_cb``: remember a fatal error for the next batch."""
        # Called inside poll. librdkafka returns a consumer's fatal error as a message
        # (see fatal_error); this hears one that comes as an error event instead.
        if is_fatal(error):
            self._fatal = error

    def take_fatal(self, messages: list[Message]) -> KafkaError | None:
        """The fatal error heard since the last call, else the one among ``messages``."""
        fatal = self._fatal or fatal_error(messages)
        if fatal is not None:
            self._fatal = None
        return fatal

    def rejoin(self, error: KafkaError) -> None:
        """Drop the fenced consumer and its partitions; join again with a new one.

        With the same ``group.instance.id`` and no member id, the new consumer replaces
        the old member: it gets its partitions back and resumes from DuckDB's positions.
        """
        now = time.monotonic()
        self._rejoins = [t for t in self._rejoins if now - t < REJOIN_WINDOW_S] + [now]
        if len(self._rejoins) > MAX_REJOINS:
            # Fenced again and again: another process has this projector id. Rejoining
            # would fence it in turn, forever; stop and say so.
            raise KafkaOperationError(
                f"the consumer was fenced {len(self._rejoins)} times within "
                f"{REJOIN_WINDOW_S:.0f}s ({error.str()}): does another projector run with "
                f"ONCELOG_PROJECTOR_ID={self._settings.projector_id}?"
            )
        self.replace(f"a fatal consumer error: {error.str()}")

    def replace(self, why: str) -> None:
        """Release every partition, close the consumer, say why, and join with a new one."""
        self._assignment.release_all()
        old, self.consumer = self.consumer, None
        if old is not None:
            with contextlib.suppress(KafkaException, RuntimeError):
                old.close()
        if self._report is not None:
            self._report(f"{self._settings.projector_id}: rejoining the group after {why}")
        self.consumer = self.join()

    def close(self) -> None:
        """Close the consumer. A static member sends no LeaveGroup on close."""
        if self.consumer is not None:
            self.consumer.close()
            self.consumer = None
