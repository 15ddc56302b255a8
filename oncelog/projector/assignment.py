"""Which partitions the projector folds, and what changes when the group moves them.

The consumer's rebalance callbacks land here (cooperative, incremental): an assign
resumes each new partition from DuckDB's position, or from a restore out of the compacted
executions topic when another member got further (:mod:`.restore`); a revoke commits,
hands the position off to the group and forgets the partition; a loss (session expired)
forgets it without a handoff. Each callback first drains the committer: positions and
restores read and write the store, so nothing may be in flight.

It also keeps the :class:`~oncelog.projector.unassigned_watch.UnassignedWatch`: once
nothing has been held for too long, :meth:`Assignment.rejoin_reason` asks the group
whether that is wrong. Compare quix-streams' ``state/recovery.py``, whose recovery
manager owns the assign and revoke of its changelog partitions in the same way.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Mapping
from typing import Any

import duckdb
from confluent_kafka import Consumer, KafkaException, TopicPartition

from oncelog.projector.committer import Committer
from oncelog.projector.history_fill import Filled, HistoryRefill, log_extent, refolded
from oncelog.projector.membership import describe_group
from oncelog.projector.memory import StateMemory
from oncelog.projector.metrics import ProjectorMetrics
from oncelog.projector.restore import needs_restore, partition_sizes, restore_partition
from oncelog.projector.store import Position, Store
from oncelog.projector.sweeps import SweepScheduler
from oncelog.projector.unassigned_watch import (
    GroupView,
    UnassignedWatch,
    group_view,
    rejoin_reason,
)
from oncelog.referee.fold import PartitionClock
from oncelog.settings import Settings
from oncelog.topics import admin_client

_DESCRIBE_TIMEOUT_S = 5.0
_COMMITTED_TIMEOUT_S = 10.0


def _copy_below(
    refill: HistoryRefill, partition: int, position: Position, con: duckdb.DuckDBPyConnection
) -> None:
    """The refolded history of ``partition`` below a restore's ``position``, on ``con``."""
    refill.copy(con, partition, position.next_offset)


def _further(handoff: Position | None, own: Position | None) -> bool:
    """Whether the group's handoff is past this file's own position of a partition."""
    return handoff is not None and own is not None and handoff.next_offset > own.next_offset


class Assignment:
    """The partitions held, with their log-time clocks; the group's rebalance callbacks."""

    def __init__(
        self,
        settings: Settings,
        kafka: Mapping[str, Any],
        store: Store,
        *,
        committer: Committer,
        memory: StateMemory,
        sweeps: SweepScheduler,
        metrics: ProjectorMetrics,
        report: Callable[[str], None] | None,
        unassigned_grace_s: float,
    ) -> None:
        """``report`` hears one line per change of assignment (``serve`` prints it)."""
        self._settings = settings
        self._kafka = kafka
        self._store = store
        self._committer = committer
        self._memory = memory
        self._sweeps = sweeps
        self._metrics = metrics
        self._report_line = report
        #: The held partitions' clocks; the batch folder advances them in place.
        self.clocks: dict[int, PartitionClock] = {}
        self._released = False  # a partition was revoked or lost since the last look
        self._unassigned = UnassignedWatch(unassigned_grace_s)

    def held(self) -> list[int]:
        """The partitions held now, in order."""
        return sorted(self.clocks)

    def take_released(self) -> bool:
        """Whether a partition was revoked or lost since the last call."""
        released, self._released = self._released, False
        return released

    # --- the rebalance callbacks ---------------------------------------------------

    def on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Resume each new partition where DuckDB (or a restore) says, then take it."""
        # Positions and restores read and write the store: nothing may be in flight.
        self._committer.drain()
        added = [tp.partition for tp in partitions]
        starts = self._starts(consumer, added)
        for tp in partitions:
            position = starts[tp.partition]
            self.clocks[tp.partition] = PartitionClock(position.clock_ms)
            tp.offset = position.next_offset
            self._metrics.assigned(tp.partition, position.next_offset)
        self._memory.assigned(added)
        consumer.incremental_assign(partitions)
        self._unassigned.holding(self.clocks)
        self._report("assigned", added)

    def on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Commit, hand the positions off to the group, forget the partitions."""
        # Committed first, so that this file's position covers what was published, and
        # handed off to the group, so that the next owner knows how far it got.
        self._committer.drain()
        revoked = [tp.partition for tp in partitions]
        self._hand_off(consumer, revoked)
        self.release(revoked)
        consumer.incremental_unassign(partitions)
        self._report("revoked", [tp.partition for tp in partitions])

    def on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Forget partitions the group already gave to others (no handoff)."""
        # The session expired (a paused process, a long stall): the group already gave
        # these partitions to others. Nothing is committed to the group on their behalf
        # (no handoff, unlike a revoke); the batches folded before are committed to this
        # instance's own file only, as positions of what it published.
        self._committer.drain()
        self.release([tp.partition for tp in partitions])
        consumer.incremental_unassign(partitions)
        self._report("lost (session expired)", [tp.partition for tp in partitions])

    def release(self, partitions: list[int]) -> None:
        """Forget every partition of ``partitions`` in memory: states, ids, clocks, sweeps."""
        self._released = True
        self._metrics.released(partitions)
        self._sweeps.drop_partitions(partitions)
        for p in partitions:
            self.clocks.pop(p, None)
        self._memory.released(partitions, self.held())
        self._unassigned.holding(self.clocks)

    def release_all(self) -> None:
        """Commit what is folded and forget every partition (the consumer is replaced)."""
        self._committer.drain()
        self.release(self.held())

    # --- where a partition resumes -------------------------------------------------

    def _starts(self, consumer: Consumer, partitions: list[int]) -> dict[int, Position]:
        """Where each newly assigned partition resumes: its own position, or a restore;
        with the history below it refolded where the file lacks it (:mod:`.history_fill`)."""
        handoffs = self._handoffs(consumer, partitions)  # read before the executions topic
        positions = self._store.positions()
        # Sizes only matter where another member got further than this file.
        passed = [p for p in partitions if _further(handoffs.get(p), positions.get(p))]
        sizes = partition_sizes(self._kafka, self._settings.executions_topic, passed)
        restoring = [
            p
            for p in partitions
            if needs_restore(positions.get(p), handoffs.get(p), sizes.get(p, 0))
        ]
        extent = log_extent(self._kafka, self._settings.requests_topic, partitions)
        # A restore's position is not known before it reads the snapshots: its history
        # must be whole below the log's end, which is past that position.
        ends = {p: extent[p][1] if p in restoring else positions[p].next_offset for p in partitions}
        starts: dict[int, Position] = {}
        with refolded(self._settings, self._kafka, self._store, ends, extent) as refill:
            for p in partitions:
                if p in restoring:
                    # The history goes in the restore's transaction: no reader sees the
                    # restored position before the requests below it.
                    starts[p] = restore_partition(
                        self._settings,
                        self._kafka,
                        self._store,
                        p,
                        handoffs.get(p),
                        also=functools.partial(_copy_below, refill, p),
                    )
                else:
                    starts[p] = positions[p]
                    refill.copy_alone(p, starts[p].next_offset)
        if restoring:
            self._report("restored from the executions topic", restoring)
        self._report_refill(refill.filled)
        return starts

    def _report_refill(self, filled: Filled) -> None:
        if filled.requests:
            requests, versions = sum(filled.requests.values()), sum(filled.versions.values())
            source = f"the requests topic ({requests} requests, {versions} versions)"
            self._report(f"history refolded from {source}", list(filled.requests))

    def _handoffs(self, consumer: Consumer, partitions: list[int]) -> dict[int, Position]:
        """The positions the partitions' last owners committed to the group (see _hand_off)."""
        if not partitions:
            return {}
        topic = self._settings.requests_topic
        asked = [TopicPartition(topic, p) for p in partitions]
        try:
            committed = consumer.committed(asked, _COMMITTED_TIMEOUT_S)
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

    # --- holding nothing -----------------------------------------------------------

    def rejoin_reason(self, partitions: int) -> str | None:
        """Why to rejoin with a new consumer, once nothing has been held for too long and
        the group says that is wrong (:func:`rejoin_reason`); None: not now, or not at all.

        ``partitions``: of the requests topic. Never stay silently idle.
        """
        if not self._unassigned.due():
            return None
        reason = rejoin_reason(self._look_at_group(partitions))
        held_for = self._unassigned.unassigned_s()
        self._unassigned.looked()
        return None if reason is None else f"{held_for:.0f}s without partitions: {reason}"

    def _look_at_group(self, partitions: int) -> GroupView | None:
        """The coordinator's view of the group, as this projector sees it (None: no answer).

        A new admin client each time (once a grace period, only while nothing is held):
        one kept since start-up can be as cut off as the stuck consumer, having dropped
        every broker it knew during an outage (see docs/reliability.md).
        """
        admin = admin_client(self._settings, self._kafka["bootstrap.servers"])
        state = describe_group(admin, self._settings, _DESCRIBE_TIMEOUT_S)
        if state is None:
            return None
        return group_view(state, partitions, self._settings.projector_id)

    def _report(self, what: str, partitions: list[int]) -> None:
        if self._report_line is not None and partitions:
            self._report_line(f"{self._settings.projector_id}: {what}: {sorted(partitions)}")
