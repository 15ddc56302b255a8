"""The projector: consume requests, fold them, publish decisions and snapshots, commit.

Per poll batch: decode, take the touched states from memory (the bounded
:class:`StateCache` of the assigned partitions; a miss of a known operation is
one DuckDB query), fold, publish decisions + snapshots + dead letters, and hand
the batch to the committer thread. Every second or so (or 20k records) it
flushes the producer and then commits state, history, audit and the
per-partition positions of everything handed over in ONE DuckDB transaction.
A crash anywhere before that commit refolds the same records from the same
state and so only republishes identical records.

:class:`Projector` is the loop and the wiring of its parts: the consumer in its group
(:mod:`.group_consumer`), the partitions it holds (:mod:`.assignment`), the states in
memory (:mod:`.memory`), the judge over a poll batch (:mod:`.batch`), the producers
(:mod:`.publisher`) and the committer thread (:mod:`.committer`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from confluent_kafka import KafkaException, Message, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from prometheus_client import CollectorRegistry

from oncelog.kafka.reader import consume_available, partition_count
from oncelog.projector.assignment import Assignment
from oncelog.projector.batch import BatchFolder, Folded
from oncelog.projector.committer import Committer
from oncelog.projector.group_consumer import GroupConsumer, group_config
from oncelog.projector.memory import StateMemory
from oncelog.projector.metrics import ProjectorMetrics
from oncelog.projector.publisher import EXPRESS_BATCH, PUBLISH_LINGER_MS, Publisher
from oncelog.projector.stall_watch import StallWatch
from oncelog.projector.states import DEFAULT_MAX_STATES
from oncelog.projector.store import Batch, Store
from oncelog.projector.sweeps import SweepScheduler
from oncelog.projector.unassigned_watch import DEFAULT_MARGIN_S
from oncelog.settings import Settings
from oncelog.topics import admin_client, check_topics, ledger_topics
from oncelog.tracing import active as tracing_active
from oncelog.tracing.batch_spans import DecisionHeaders, batch_spans

# Also the names the bench and the tests import from here.
__all__ = [
    "EXPRESS_BATCH",
    "LAG_REPORT_S",
    "PUBLISH_LINGER_MS",
    "Projector",
    "group_config",
]

#: How often a busy projector updates its lag gauges (always when a poll is empty).
LAG_REPORT_S = 0.5

#: How long the stall watch waits for the held partitions' high watermarks.
_WATERMARK_TIMEOUT_S = 2.0


def _committer(
    store: Store,
    on_batch: Callable[[Batch], None] | None,
    publisher: Publisher,
    metrics: ProjectorMetrics,
) -> Committer:
    """The committer thread, from the store's positions on."""
    return Committer(
        store,
        on_batch,
        # A flush before each commit: a committed position always means "published".
        before_commit=publisher.flush,
        committed={p: pos.next_offset for p, pos in store.positions().items()},
        on_commit_seconds=metrics.committed,
    )


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
        before_publish: Callable[[list[tuple[int, int]]], None] | None = None,
        max_states: int = DEFAULT_MAX_STATES,
        on_rebalance: Callable[[str], None] | None = None,
        metrics: CollectorRegistry | None = None,
        unassigned_margin_s: float = DEFAULT_MARGIN_S,
        stall_watch: StallWatch | None = None,
    ) -> None:
        """``on_rebalance`` hears a line per new assignment or producers' renewal (serve prints).

        ``metrics``: the registry to report in (``serve`` scrapes it at ``/metrics``);
        None: a registry of this projector's own, which nobody reads.
        ``unassigned_margin_s``: how long past the session timeout a projector may hold
        no partition before it asks the group why (:mod:`.unassigned_watch`).
        ``stall_watch``: when a held partition that is no longer fetched makes it replace
        its consumer (:mod:`.stall_watch`; None: its defaults).
        """
        self._settings = settings
        kafka = settings.kafka_config(bootstrap)
        self._kafka = kafka
        self._batch_size = batch_size
        self._poll_timeout_s = poll_timeout_s
        self._before_commit = before_commit
        self._before_publish = before_publish
        self._lag_reported_at = float("-inf")  # the first batch reports
        self._partitions = 0  # of the requests topic, known after start()
        self._folder: BatchFolder | None = None  # made by start(), which counts partitions
        self._publisher = Publisher(settings, kafka, report=on_rebalance)
        self.metrics = ProjectorMetrics(metrics or CollectorRegistry(), settings.requests_topic)
        self._committer = _committer(store, on_batch, self._publisher, self.metrics)
        self._reader = store.reader()
        self._memory = StateMemory(store, self._reader, max_states)
        self.metrics.count_cached_states(self._memory.states.__len__)
        self._sweeps = SweepScheduler(settings.requests_topic, sweep_interval_s)
        self._stalls = stall_watch or StallWatch()
        self._watch_admin: AdminClient | None = None  # made at the stall watch's first look
        # The parts that answer the consumer group's calls, public so that a test can make
        # the calls librdkafka makes (a fatal error, lost partitions).
        self.assignment = Assignment(
            settings,
            kafka,
            store,
            committer=self._committer,
            memory=self._memory,
            sweeps=self._sweeps,
            metrics=self.metrics,
            report=on_rebalance,
            unassigned_grace_s=settings.group_session_timeout_ms / 1000 + unassigned_margin_s,
        )
        self.group = GroupConsumer(settings, kafka, self.assignment, on_rebalance)

    # --- lifecycle -----------------------------------------------------------------

    def start(self) -> None:
        """Check the topics, then join the consumer group."""
        admin = admin_client(self._settings, self._kafka["bootstrap.servers"])
        specs = ledger_topics(self._settings)
        counts = check_topics(admin, specs, self._settings.replication_factor)
        self._publisher.reply_partitions = counts[self._settings.decisions_topic]
        consumer = self.group.join()
        self._partitions = partition_count(
            consumer, self._settings.requests_topic, timeout_s=self._settings.connect_timeout_s
        )
        self._memory.partitions = self._partitions
        clocks = self.assignment.clocks
        self._folder = BatchFolder(
            self._settings.requests_topic,
            self._partitions,
            clocks,
            self._settings.max_clock_step_ms,
        )
        self.group.consumer = consumer

    def run(
        self, stop: threading.Event, after_batch: Callable[[int], object] | None = None
    ) -> None:
        """Process batches until ``stop`` is set; ``after_batch`` hears each one's size."""
        if self.group.consumer is None:
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
        self.group.close()
        self._publisher.close()

    def held_partitions(self) -> list[int]:
        """The partitions of the requests topic this projector folds now (any thread may
        ask: the checkpoints' folder follows them, :mod:`.checkpoints`)."""
        return self.assignment.held()

    def wait_committed(self, partition: int, offset: int, timeout_s: float) -> bool:
        """Block until the request at ``offset`` of ``partition`` is committed to DuckDB
        (bounded; False on timeout): decisions are published before their commit."""
        return self._committer.wait_committed(partition, offset, timeout_s)

    # --- one batch -----------------------------------------------------------------

    def run_once(self) -> int:
        """Consume, fold, publish and commit one batch; return the records handled."""
        consumer = self.group.consumer
        assert consumer is not None, "start() first"
        messages = consume_available(consumer, self._batch_size, self._poll_timeout_s)
        fatal = self.group.take_fatal(messages)
        if fatal is not None:
            self.group.rejoin(fatal)
            return 0
        if self.assignment.take_released():
            # Records fetched before a revoke (or loss) that ran inside this very poll:
            # the partition's next owner folds them, from the position committed then.
            held = self.assignment.clocks
            messages = [m for m in messages if m.partition() in held]
        if messages:
            self._process(messages)  # reports the lag itself, before any fault hook
        else:
            self._report_lag(at_rest=True)
        # Sweeps are requests, in no order with what the projector publishes: the express
        # lane, connected by any small batch, so an idle projector needs no second one.
        self._sweeps.maybe_send(self._reader, self._publisher.express, self.assignment.held())
        why = self.assignment.rejoin_reason(self._partitions)
        if why is None and self._stalls.due():
            why = self._stalled()
        if why is not None:
            self.group.replace(why)
        return len(messages)

    def _stalled(self) -> str | None:
        """Why to replace the consumer: a held partition it no longer fetches, or None.

        The watermarks come from an admin client of the watch's own, in one request: the
        consumer's connections wait out its long fetch polls.
        """
        next_offsets = self.metrics.next_offsets()
        if not next_offsets:
            return None
        if self._watch_admin is None:
            self._watch_admin = admin_client(self._settings, self._kafka["bootstrap.servers"])
        topic = self._settings.requests_topic
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        asked = {TopicPartition(topic, p): latest for p in next_offsets}
        highs: dict[int, int] = {}
        try:
            answers = self._watch_admin.list_offsets(asked, request_timeout=_WATERMARK_TIMEOUT_S)
            for tp, future in answers.items():
                highs[tp.partition] = future.result().offset
        except KafkaException:
            return None  # no answer from the broker: an outage, not a stall
        return self._stalls.look(next_offsets, highs)

    def _process(self, messages: list[Message]) -> None:
        """Judge a poll's records, publish what they decided, hand the batch to the committer."""
        assert self._folder is not None
        traced = tracing_active()  # once a batch: with tracing off, no header is read
        began, began_ns = time.perf_counter(), time.time_ns() if traced else 0
        out = self._folder.fold(messages, self._memory.load)
        folded_s = time.perf_counter() - began
        traces = self._batch_spans(messages, out, began_ns) if traced else None
        self._memory.remember(out.snapshots)
        if self._before_publish is not None:
            # Fault injection: folded, not published; told which requests it decided.
            self._before_publish([(e.partition, e.offset) for e in out.audit])
        self._publisher.publish(out, traces)
        next_offsets = {p: pos.next_offset for p, pos in out.positions.items()}
        self.metrics.batch_folded(folded_s, out.audit, out.dead, next_offsets)
        self._report_lag()
        if self._before_commit is not None:
            self._publisher.flush()
            self._before_commit()  # fault injection: published, not committed
        self._sweeps.folded(out.audit)
        self._committer.submit(out.batch())
        if self._memory.states.over_limit():
            # Only committed states may go: a miss reloads the version DuckDB holds.
            self._committer.drain()
            self._memory.states.evict()

    def _batch_spans(
        self, messages: list[Message], out: Folded, began_ns: int
    ) -> DecisionHeaders | None:
        """The batch's fold spans (tracing on); the headers its decisions carry back."""
        window = (began_ns, time.time_ns())
        return batch_spans(messages, out.audit, self._settings.requests_topic, window)

    def _report_lag(self, *, at_rest: bool = False) -> None:
        """Each assigned partition's lag, against the high watermark of its last fetch.

        ``cached=True`` reads what the fetches (made anyway) brought back: no broker
        round trip. Before a partition's first fetch the watermark is unknown (negative)
        and its lag is left unreported. Under load at most every ``LAG_REPORT_S`` (a
        scrape reads it every few seconds; per batch it took 2-4 % of the folding
        thread at 10 records a batch); at rest (an empty poll) always, so a projector
        that caught up shows its lag of 0 within a poll.
        """
        consumer = self.group.consumer
        assert consumer is not None
        if not at_rest:
            now = time.monotonic()
            if now - self._lag_reported_at < LAG_REPORT_S:
                return
            self._lag_reported_at = now
        topic = self._settings.requests_topic
        for p in self.metrics.assigned_partitions():
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), cached=True)
            self.metrics.watermark(p, high)
