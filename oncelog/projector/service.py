"""The projector: consume requests, fold them, publish decisions and snapshots, commit.

Per poll batch: decode, take the touched states from memory (the bounded
:class:`StateCache` of the assigned partitions; a miss of a known operation is
one DuckDB query), fold, publish decisions + snapshots + dead letters, and hand
the batch to the committer thread. Every second or so (or 20k records) it
flushes the producer and then commits state, history, audit and the
per-partition positions of everything handed over in ONE DuckDB transaction.
A crash anywhere before that commit refolds the same records from the same
state and so only republishes identical records.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Collection

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition
from prometheus_client import CollectorRegistry

from oncelog.errors import KafkaOperationError
from oncelog.identity.partitioner import partition_for, reply_partition_for
from oncelog.kafka.lanes import Lanes
from oncelog.kafka.reader import consume_available, partition_count
from oncelog.projector.batch import BatchFolder, Folded
from oncelog.projector.committer import Committer
from oncelog.projector.membership import describe_group, group_id, member_client_id
from oncelog.projector.metrics import ProjectorMetrics
from oncelog.projector.restore import needs_restore, partition_sizes, restore_partition
from oncelog.projector.states import DEFAULT_MAX_STATES, StateCache
from oncelog.projector.store import Batch, Position, Store
from oncelog.projector.sweeps import SweepScheduler
from oncelog.projector.unassigned_watch import (
    DEFAULT_MARGIN_S,
    GroupView,
    UnassignedWatch,
    group_view,
    rejoin_reason,
)
from oncelog.referee.fold import PartitionClock
from oncelog.schemas.codec import encode_decision, encode_snapshot
from oncelog.schemas.models import ExecutionState
from oncelog.settings import Settings
from oncelog.topics import admin_client, check_topics, ledger_topics

_FLUSH_TIMEOUT_S = 60.0
#: How long the projector's records wait for others to share their produce request (ms)
#: when they are not alone (oncelog.kafka.lanes): a poll batch of more than
#: ``EXPRESS_BATCH`` requests, or any batch while earlier batched records are unacknowledged.
PUBLISH_LINGER_MS = 2.0
EXPRESS_BATCH = 2
#: How often a busy projector updates its lag gauges (always when a poll is empty).
LAG_REPORT_S = 0.5
#: More rejoins than this within the window: not a coordinator failover, a duplicate id.
_MAX_REJOINS = 3
_REJOIN_WINDOW_S = 60.0
_DESCRIBE_TIMEOUT_S = 5.0


def _is_fatal(error: KafkaError) -> bool:
    # A consumer's fatal error arrives as code _FATAL with fatal() false
    # (confluentinc/confluent-kafka-python#869); an event may set fatal() instead.
    return error.fatal() or error.code() == KafkaError._FATAL


def _fatal_error(messages: list[Message]) -> KafkaError | None:
    """The fatal error among a poll's records, if any. It must be looked for before the
    records of released partitions are dropped: it carries no partition."""
    for msg in messages:
        error = msg.error()
        if error is not None and _is_fatal(error):
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
        "session.timeout.ms": session_ms,
        "heartbeat.interval.ms": max(100, min(3000, session_ms // 3)),
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        # A long poll: answered as soon as a request lands, and an idle projector does not
        # fetch 100 times a second.
        "fetch.wait.max.ms": 500,
        "log_level": 3,
    }


class Projector:
    """One projector process: owns the DuckDB file, consumes in a consumer group."""

    def __init__(
        self,
        settings: Settings,
        bootstrap: str,
        store: Store,
        *,
        batch_size: int = 5000,
        poll_timeout_s: float = 0.1,
        sweep_interval_s: float = 1.0,
        on_batch: Callable[[Batch], None] | None = None,
        before_commit: Callable[[], None] | None = None,
        max_states: int = DEFAULT_MAX_STATES,
        on_rebalance: Callable[[str], None] | None = None,
        metrics: CollectorRegistry | None = None,
        unassigned_margin_s: float = DEFAULT_MARGIN_S,
    ) -> None:
        """``on_rebalance`` hears one line per change of assignment (``serve`` prints it).

        ``metrics``: the registry to report in (``serve`` scrapes it at ``/metrics``);
        None: a registry of this projector's own, which nobody reads.
        ``unassigned_margin_s``: how long past the session timeout a projector may hold
        no partition before it asks the group why (:mod:`.unassigned_watch`).
        """
        self._settings = settings
        self._kafka = settings.kafka_config(bootstrap)
        self._store = store
        self._batch_size = batch_size
        self._poll_timeout_s = poll_timeout_s
        self._lag_reported_at = float("-inf")  # the first batch reports
        self._clocks: dict[int, PartitionClock] = {}
        # A small batch's records (someone waits on each decision, alone) leave at once;
        # under load they linger to share produce requests (oncelog.kafka.lanes).
        self._lanes = Lanes(self._kafka, PUBLISH_LINGER_MS)
        self._consumer: Consumer | None = None
        self._folder: BatchFolder | None = None
        self._sweeps = SweepScheduler(settings.requests_topic, sweep_interval_s)
        self._before_commit = before_commit
        self._on_rebalance = on_rebalance
        self._released = False  # a partition was revoked or lost since the last poll
        self.metrics = ProjectorMetrics(metrics or CollectorRegistry(), settings.requests_topic)
        # A flush before each commit: a committed position always means "published".
        self._committer = Committer(
            store, on_batch,
            before_commit=lambda: self._lanes.flush(_FLUSH_TIMEOUT_S),
            committed={p: pos.next_offset for p, pos in store.positions().items()},
            on_commit_seconds=self.metrics.committed,
        )  # fmt: skip
        self._reader = store.reader()
        self._states = StateCache(max_states)
        self.metrics.count_cached_states(self._states.__len__)
        self._partitions = 0  # of the requests topic, known after start()
        self._reply_partitions = 0  # of the decisions topic, known after start()
        # Every operation id the store holds for the assigned partitions: a new operation
        # (most claims) needs no DuckDB lookup at all.
        self._known: set[str] = set()
        self._fatal: KafkaError | None = None  # the consumer's, heard by _on_consumer_error
        self._rejoins: list[float] = []  # monotonic times of the recent rejoins
        grace_s = settings.group_session_timeout_ms / 1000 + unassigned_margin_s
        self._unassigned = UnassignedWatch(grace_s)

    # --- lifecycle -----------------------------------------------------------------

    def start(self) -> None:
        """Check the topics, then join the consumer group."""
        admin = admin_client(self._settings, self._kafka["bootstrap.servers"])
        specs = ledger_topics(self._settings)
        counts = check_topics(admin, specs, self._settings.replication_factor)
        self._reply_partitions = counts[self._settings.decisions_topic]
        consumer = self._join()
        self._partitions = partition_count(consumer, self._settings.requests_topic)
        self._folder = BatchFolder(self._settings.requests_topic, self._partitions, self._clocks)
        self._consumer = consumer

    def _join(self) -> Consumer:
        """A new consumer, subscribed: it joins the group at its first poll."""
        config = {**self._kafka, **group_config(self._settings)}
        consumer = Consumer({**config, "error_cb": self._on_consumer_error})
        consumer.subscribe(
            [self._settings.requests_topic],
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )
        return consumer

    def _on_consumer_error(self, error: KafkaError) -> None:
        # Called inside poll. librdkafka returns a consumer's fatal error as a message
        # (see _fatal_error); this hears one that comes as an error event instead.
        if _is_fatal(error):
            self._fatal = error

    def _rejoin(self, error: KafkaError) -> None:
        """Drop the fenced consumer and its partitions; join again with a new one.

        With the same ``group.instance.id`` and no member id, the new consumer replaces
        the old member: it gets its partitions back and resumes from DuckDB's positions.
        """
        now = time.monotonic()
        self._rejoins = [t for t in self._rejoins if now - t < _REJOIN_WINDOW_S] + [now]
        if len(self._rejoins) > _MAX_REJOINS:
            # Fenced again and again: another process has this projector id. Rejoining
            # would fence it in turn, forever; stop and say so.
            raise KafkaOperationError(
                f"the consumer was fenced {len(self._rejoins)} times within "
                f"{_REJOIN_WINDOW_S:.0f}s ({error.str()}): does another projector run with "
                f"ONCELOG_PROJECTOR_ID={self._settings.projector_id}?"
            )
        self._replace_consumer(f"a fatal consumer error: {error.str()}")

    def _replace_consumer(self, why: str) -> None:
        """Release every partition, close the consumer, say why, and join with a new one."""
        self._committer.drain()
        self._release(sorted(self._clocks))
        old, self._consumer = self._consumer, None
        if old is not None:
            with contextlib.suppress(KafkaException, RuntimeError):
                old.close()
        if self._on_rebalance is not None:
            self._on_rebalance(f"{self._settings.projector_id}: rejoining the group after {why}")
        self._consumer = self._join()

    def _watch_unassigned(self) -> None:
        """Rejoin with a new consumer when nothing has been held for too long, and the
        group says that is wrong (:func:`rejoin_reason`): never stay silently idle."""
        if not self._unassigned.due():
            return
        reason = rejoin_reason(self._look_at_group())
        held_for = self._unassigned.unassigned_s()
        self._unassigned.looked()
        if reason is not None:
            self._replace_consumer(f"{held_for:.0f}s without partitions: {reason}")

    def _look_at_group(self) -> GroupView | None:
        """The coordinator's view of the group, as this projector sees it (None: no answer).

        A new admin client each time (once a grace period, only while nothing is held):
        one kept since start-up can be as cut off as the stuck consumer, having dropped
        every broker it knew during an outage (see docs/reliability.md).
        """
        admin = admin_client(self._settings, self._kafka["bootstrap.servers"])
        state = describe_group(admin, self._settings, _DESCRIBE_TIMEOUT_S)
        if state is None:
            return None
        return group_view(state, self._partitions, self._settings.projector_id)

    def run(
        self, stop: threading.Event, after_batch: Callable[[int], object] | None = None
    ) -> None:
        """Process batches until ``stop`` is set; ``after_batch`` hears each one's size."""
        if self._consumer is None:
            self.start()
        while not stop.is_set():
            handled = self.run_once()
            if after_batch is not None:
                after_batch(handled)

    def close(self) -> None:
        """Commit what is folded, close the consumer and flush what is queued.

        A static member sends no LeaveGroup on close: its partitions wait the session
        timeout for it (a restart within it takes them back without a rebalance).
        """
        self._committer.close()
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        self._lanes.close()

    # --- assignment ----------------------------------------------------------------

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Positions and restores read and write the store: nothing may be in flight.
        self._committer.drain()
        added = [tp.partition for tp in partitions]
        starts = self._starts(consumer, added)
        for tp in partitions:
            position = starts[tp.partition]
            self._clocks[tp.partition] = PartitionClock(position.clock_ms)
            tp.offset = position.next_offset
            self.metrics.assigned(tp.partition, position.next_offset)
        self._known |= self._store.operation_ids(added)
        consumer.incremental_assign(partitions)
        self._unassigned.holding(self._clocks)
        self._report("assigned", added)

    def _starts(self, consumer: Consumer, partitions: list[int]) -> dict[int, Position]:
        """Where each newly assigned partition resumes: its own position, or a restore."""
        handoffs = self._handoffs(consumer, partitions)  # read before the executions topic
        positions = self._store.positions()
        # Sizes only matter where another member got further than this file.
        passed = [
            p for p in partitions
            if p in positions and p in handoffs
            and handoffs[p].next_offset > positions[p].next_offset
        ]  # fmt: skip
        sizes = partition_sizes(self._kafka, self._settings.executions_topic, passed)
        starts: dict[int, Position] = {}
        restored: list[int] = []
        for p in partitions:
            own, handoff = positions.get(p), handoffs.get(p)
            if needs_restore(own, handoff, sizes.get(p, 0)):
                own = restore_partition(self._settings, self._kafka, self._store, p, handoff)
                restored.append(p)
            assert own is not None
            starts[p] = own
        if restored:
            self._report("restored from the executions topic", restored)
        return starts

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Committed first, so that this file's position covers what was published, and
        # handed off to the group, so that the next owner knows how far it got.
        self._committer.drain()
        revoked = [tp.partition for tp in partitions]
        self._hand_off(consumer, revoked)
        self._release(revoked)
        consumer.incremental_unassign(partitions)
        self._report("revoked", [tp.partition for tp in partitions])

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # The session expired (a paused process, a long stall): the group already gave
        # these partitions to others. Nothing is committed to the group on their behalf
        # (no handoff, unlike a revoke); the batches folded before are committed to this
        # instance's own file only, as positions of what it published.
        self._committer.drain()
        self._release([tp.partition for tp in partitions])
        consumer.incremental_unassign(partitions)
        self._report("lost (session expired)", [tp.partition for tp in partitions])

    def _handoffs(self, consumer: Consumer, partitions: list[int]) -> dict[int, Position]:
        """The positions the partitions' last owners committed to the group (see _hand_off)."""
        if not partitions:
            return {}
        topic = self._settings.requests_topic
        try:
            committed = consumer.committed([TopicPartition(topic, p) for p in partitions], 10)
        except KafkaException:
            return {}  # a hint only: without it, a stale own position is refolded
        handoffs: dict[int, Position] = {}
        for tp in committed:
            clock = tp.metadata or ""
            if tp.error is None and tp.offset >= 0 and clock.isdigit():
                handoffs[tp.partition] = Position(tp.offset, int(clock))
        return handoffs

    def _hand_off(self, consumer: Consumer, partitions: list[int]) -> None:
        """Commit the revoked partitions' DuckDB positions to the group: offset, clock as metadata.

        The group's offsets tell the member that gets a partition next how far it was
        folded and published (:func:`needs_restore`); the fetch start always comes
        from DuckDB or a restore, never from them. Committed only here, inside the
        revoke callback: a commit outside it can meet a rebalance in progress, which
        librdkafka answers by giving up the whole assignment and joining again
        (confluentinc/librdkafka#4059). A killed member hands nothing off; its next
        owner then refolds from further back, identically. A lost partition is never
        committed: its session expired, it belongs to another member already.
        """
        positions = self._store.positions()
        topic = self._settings.requests_topic
        offsets = [
            TopicPartition(topic, p, pos.next_offset, str(pos.clock_ms))
            for p in partitions
            if (pos := positions.get(p)) is not None and pos.clock_ms is not None
        ]
        if offsets:
            with contextlib.suppress(KafkaException):  # a hint only, as for a killed member
                consumer.commit(offsets=offsets, asynchronous=False)

    def _report(self, what: str, partitions: list[int]) -> None:
        if self._on_rebalance is not None and partitions:
            self._on_rebalance(f"{self._settings.projector_id}: {what}: {sorted(partitions)}")

    def _release(self, partitions: list[int]) -> None:
        """Forget every partition of ``partitions`` in memory: states, ids, clocks, sweeps."""
        self._released = True
        self.metrics.released(partitions)
        self._states.drop_partitions(partitions)
        self._sweeps.drop_partitions(partitions)
        for p in partitions:
            self._clocks.pop(p, None)
        self._known = self._store.operation_ids(sorted(self._clocks))
        self._unassigned.holding(self._clocks)

    def wait_committed(self, partition: int, offset: int, timeout_s: float) -> bool:
        """Block until the request at ``offset`` of ``partition`` is committed to DuckDB
        (bounded; False on timeout): decisions are published before their commit."""
        return self._committer.wait_committed(partition, offset, timeout_s)

    # --- one batch -----------------------------------------------------------------

    def run_once(self) -> int:
        """Consume, fold, publish and commit one batch; return the records handled."""
        assert self._consumer is not None, "start() first"
        messages = consume_available(self._consumer, self._batch_size, self._poll_timeout_s)
        fatal = self._fatal or _fatal_error(messages)
        if fatal is not None:
            self._fatal = None
            self._rejoin(fatal)
            return 0
        if self._released:
            # Records fetched before a revoke (or loss) that ran inside this very poll:
            # the partition's next owner folds them, from the position committed then.
            self._released = False
            messages = [m for m in messages if m.partition() in self._clocks]
        if messages:
            self._process(messages)  # reports the lag itself, before any fault hook
        else:
            self._report_lag(at_rest=True)
        # Sweeps are requests, in no order with what the projector publishes: the express
        # lane, connected by any small batch, so an idle projector needs no second one.
        self._sweeps.maybe_send(self._reader, self._lanes.express, sorted(self._clocks))
        self._watch_unassigned()
        return len(messages)

    def _report_lag(self, *, at_rest: bool = False) -> None:
        """Each assigned partition's lag, against the high watermark of its last fetch.

        ``cached=True`` reads what the fetches (made anyway) brought back: no broker
        round trip. Before a partition's first fetch the watermark is unknown (negative)
        and its lag is left unreported. Under load at most every ``LAG_REPORT_S`` (a
        scrape reads it every few seconds; per batch it took 2-4 % of the folding
        thread at 10 records a batch); at rest (an empty poll) always, so a projector
        that caught up shows its lag of 0 within a poll.
        """
        assert self._consumer is not None
        if not at_rest:
            now = time.monotonic()
            if now - self._lag_reported_at < LAG_REPORT_S:
                return
            self._lag_reported_at = now
        topic = self._settings.requests_topic
        for p in self.metrics.assigned_partitions():
            _, high = self._consumer.get_watermark_offsets(TopicPartition(topic, p), cached=True)
            self.metrics.watermark(p, high)

    def _process(self, messages: list[Message]) -> None:
        assert self._folder is not None
        began = time.perf_counter()
        out = self._folder.fold(messages, self._load)
        folded_s = time.perf_counter() - began
        for snapshot in out.snapshots:
            self._states.put(snapshot.source_partition, snapshot.state)
            self._known.add(snapshot.state.operation_id)
        self._publish(out)
        next_offsets = {p: pos.next_offset for p, pos in out.positions.items()}
        self.metrics.batch_folded(folded_s, out.audit, out.dead, next_offsets)
        self._report_lag()
        if self._before_commit is not None:
            self._lanes.flush(_FLUSH_TIMEOUT_S)
            self._before_commit()  # fault injection: published, not committed
        self._sweeps.folded(out.audit)
        self._committer.submit(out.batch())
        if self._states.over_limit():
            # Only committed states may go: a miss reloads the version DuckDB holds.
            self._committer.drain()
            self._states.evict()

    def _load(self, operation_ids: Collection[str]) -> dict[str, ExecutionState]:
        """States from memory (folded, maybe not yet committed), known others from DuckDB."""
        found = self._states.get_many(operation_ids)
        known = self._known
        missing = [op for op in operation_ids if op not in found and op in known]
        if missing:
            loaded = self._reader.load_states(missing)
            for state in loaded.values():
                self._states.put(partition_for(state.channel_id, self._partitions), state)
            found.update(loaded)
        return found

    def _publish(self, out: Folded) -> None:
        """Queue every decision, snapshot and dead letter of the batch (flushed before commit).

        All in one lane (oncelog.kafka.lanes): the lane that still holds unacknowledged
        records, else express for a small batch. So a decision's snapshot is appended with
        it, and a key's versions in order.
        """
        s = self._settings
        send = self._lanes.lane(alone=len(out.audit) <= EXPRESS_BATCH).send_nowait
        replies = self._reply_partitions
        for entry in out.audit:
            decision = entry.decision
            key = decision.request_id.encode()
            # Where its client listens (spec §3): a function of the request alone.
            reply = reply_partition_for(entry.request.reply_partition, entry.partition, replies)
            send(s.decisions_topic, reply, key, encode_decision(decision))
        for snap in out.snapshots:
            key = snap.state.operation_id.encode()
            send(s.executions_topic, snap.source_partition, key, encode_snapshot(snap))
        for dead in out.dead:
            headers = [
                ("source_topic", dead.topic.encode()),
                ("source_partition", str(dead.partition).encode()),
                ("source_offset", str(dead.offset).encode()),
                ("error_code", dead.code.encode()),
                ("error", dead.message.encode()[:4096]),
            ]
            raw = out.raw[(dead.partition, dead.offset)]
            send(s.deadletter_topic, dead.partition, b"", raw, headers)
