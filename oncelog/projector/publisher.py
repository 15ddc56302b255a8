"""What the projector publishes for a folded batch: decisions, snapshots and dead letters.

Everything goes out through two lanes of one producer role (:mod:`oncelog.kafka.lanes`):
a small batch's records (someone waits on each decision, alone) leave at once; under
load they linger to share produce requests. The committer flushes the lanes before each
DuckDB commit, so a committed position always means "published".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from oncelog.errors import KafkaOperationError
from oncelog.identity.partitioner import reply_partition_for
from oncelog.kafka.lanes import Lanes
from oncelog.kafka.producer import FutureProducer
from oncelog.projector.batch import Folded
from oncelog.projector.store import DeadLetter
from oncelog.schemas.codec import encode_decision, encode_snapshot
from oncelog.settings import Settings
from oncelog.tracing.batch_spans import DecisionHeaders

#: How long the projector's records wait for others to share their produce request (ms)
#: when they are not alone (oncelog.kafka.lanes): a poll batch of more than
#: ``EXPRESS_BATCH`` requests, or any batch while earlier batched records are unacknowledged.
PUBLISH_LINGER_MS = 2.0
EXPRESS_BATCH = 2
#: How long a commit waits for what it publishes: past the producers' message.timeout.ms
#: (oncelog.kafka.producer, 300 s), by which each record is delivered or fails with its own
#: error. A shorter bound stopped serve on a stall it would have outlived: the network
#: drill's cut between three brokers held acknowledgements (acks=all) for over 60 s.
FLUSH_TIMEOUT_S = 330.0
#: A flush that saw no record acknowledged for this long renews the producers (they take
#: what was queued along): an idempotent producer's partition can stay stuck until
#: message.timeout.ms after the links between brokers healed, while a new producer
#: delivers at once (docs/reliability.md, "A publisher that stops delivering").
PUBLISH_STALL_S = 30.0
_WAIT_SLICE_S = 1.0
#: A dead letter's error message is cut here: a header, not a second copy of the record.
_MAX_ERROR_BYTES = 4096


def dead_letter_headers(dead: DeadLetter) -> list[tuple[str, bytes]]:
    """Where a dead letter came from and why it was refused, as Kafka record headers."""
    return [
        ("source_topic", dead.topic.encode()),
        ("source_partition", str(dead.partition).encode()),
        ("source_offset", str(dead.offset).encode()),
        ("error_code", dead.code.encode()),
        ("error", dead.message.encode()[:_MAX_ERROR_BYTES]),
    ]


class Publisher:
    """The projector's producers: a folded batch's records, queued in one lane."""

    def __init__(
        self,
        settings: Settings,
        kafka: Mapping[str, Any],
        *,
        report: Callable[[str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        lanes: Lanes | None = None,
    ) -> None:
        """``report`` hears a renewal of the producers; ``clock`` (monotonic seconds) and
        ``lanes`` are injectable."""
        self._settings = settings
        self._lanes = lanes or Lanes(kafka, PUBLISH_LINGER_MS)
        self._report = report
        self._clock = clock
        #: Partitions of the decisions topic, known once the projector checked the topics.
        self.reply_partitions = 0

    @property
    def express(self) -> FutureProducer:
        """The lane for a record that is alone (the projector's sweeps take it)."""
        return self._lanes.express

    def publish(self, out: Folded, traces: DecisionHeaders | None = None) -> None:
        """Queue every decision, snapshot and dead letter of the batch (flushed before commit).

        All in one lane (oncelog.kafka.lanes): the lane that still holds unacknowledged
        records, else express for a small batch. So a decision's snapshot is appended with
        it, and a key's versions in order. ``traces`` (tracing on): the headers of the
        decisions whose requests were traced (:mod:`oncelog.tracing.batch_spans`).
        """
        s = self._settings
        send = self._lanes.lane(alone=len(out.audit) <= EXPRESS_BATCH).send_nowait
        replies = self.reply_partitions
        for entry in out.audit:
            decision = entry.decision
            key = decision.request_id.encode()
            # Where its client listens (docs/spec.md §3): a function of the request alone.
            reply = reply_partition_for(entry.request.reply_partition, entry.partition, replies)
            headers = None if traces is None else traces.get((entry.partition, entry.offset))
            send(s.decisions_topic, reply, key, encode_decision(decision), headers)
        for snap in out.snapshots:
            key = snap.state.operation_id.encode()
            send(s.executions_topic, snap.source_partition, key, encode_snapshot(snap))
        for dead in out.dead:
            raw = out.raw[(dead.partition, dead.offset)]
            send(s.deadletter_topic, dead.partition, b"", raw, dead_letter_headers(dead))

    def flush(self) -> None:
        """Wait until everything queued is acknowledged (or raise its delivery error).

        Without a single acknowledgement for :data:`PUBLISH_STALL_S` the producers are
        renewed; after :data:`FLUSH_TIMEOUT_S` in all it raises ``kafka_error``.
        """
        began = quiet_since = self._clock()
        settled = self._lanes.settled()
        while left := self._lanes.wait(_WAIT_SLICE_S):
            now = self._clock()
            if (now_settled := self._lanes.settled()) > settled:
                settled, quiet_since = now_settled, now
            elif now - quiet_since >= PUBLISH_STALL_S:
                moved = self._lanes.renew()
                if self._report is not None:
                    self._report(
                        f"publishing: no record acknowledged for {now - quiet_since:.0f} s; "
                        f"new producers took the {moved} records still held"
                    )
                quiet_since = now
            if now - began >= FLUSH_TIMEOUT_S:
                raise KafkaOperationError(
                    f"{left} records still undelivered after {FLUSH_TIMEOUT_S:.0f} s"
                )

    def close(self) -> None:
        """Flush and release both lanes."""
        self._lanes.close()
