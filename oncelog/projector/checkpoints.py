"""``oncelog serve`` folds the checkpoints topic of the partitions its projector holds.

A LangGraph thread's checkpoints go to the partition of its ``thread_id`` (murmur2, as
a channel's requests do), and the member of the projector group that owns that
partition of the requests topic folds that partition of the checkpoints topic too: the
query routing (:mod:`oncelog.query.routing`) then finds a thread's checkpoints where it
finds a channel's states, with no second route table. :class:`CheckpointFolder` is a
consumer of its own, outside the group, that follows the projector's assignment: on
each turn it assigns itself what the projector holds now, each partition from the
position committed in DuckDB (from the beginning when there is none).

:class:`FoldProgress` tells readers how far each held partition is folded: a read
that names the position its own put was acknowledged at waits (bounded) until the
fold is past it, so a saver reads its own writes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import Final

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition

from oncelog.errors import KafkaOperationError
from oncelog.kafka.failures import kafka_failure
from oncelog.kafka.reader import consume_available, plain_consumer, read_to_end
from oncelog.projector.checkpoint_fold import RawRecord, fold_records
from oncelog.projector.checkpoint_store import CheckpointStore

#: Records folded per commit at most; a put of a 5 MB state is 5-6 records.
BATCH: Final = 2000


class FoldProgress:
    """The next offset folded of each partition this process folds; readers wait on it.

    A read waits for the partitions this process folds, or is about to: those the
    projector holds (``follow``) even before the folder has caught up with its
    assignment. A partition held elsewhere is not this process's to wait for.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._next: dict[int, int] = {}
        self._held: frozenset[int] = frozenset()
        self._assigned: Callable[[], Collection[int]] = lambda: ()

    def follow(self, assigned: Callable[[], Collection[int]]) -> None:
        """Where to learn the partitions the projector holds now."""
        self._assigned = assigned

    def hold(self, partitions: Collection[int], positions: Mapping[int, int]) -> None:
        """The partitions folded here from now on, with the positions they start at."""
        with self._changed:
            self._held = frozenset(partitions)
            self._next = {p: positions.get(p, 0) for p in self._held}
            self._changed.notify_all()

    def advanced(self, positions: Mapping[int, int]) -> None:
        """Positions committed by a batch."""
        with self._changed:
            for p, offset in positions.items():
                if p in self._held:
                    self._next[p] = max(self._next.get(p, 0), offset)
            self._changed.notify_all()

    def await_held(self, partitions: Collection[int], timeout_s: float) -> frozenset[int]:
        """Block until this process folds each of ``partitions`` (the projector holds it
        and the checkpoints' folder follows it); those still not folded here when
        ``timeout_s`` passes (empty: all are). A group member's answer counts for the
        partitions the gathering instance's view gives it, which it may learn a moment
        after the group's coordinator says so, or never when that view is stale."""
        wanted = frozenset(partitions)
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while missing := wanted - (self._held & frozenset(self._assigned())):
                left = deadline - time.monotonic()
                if left <= 0:
                    return missing
                self._changed.wait(left)
        return frozenset()

    def _behind(self, targets: Mapping[int, int], mine_only: bool) -> dict[int, int]:
        mine = self._held | frozenset(self._assigned())
        return {
            p: t - self._next.get(p, 0)
            for p, t in targets.items()
            if (p in mine or not mine_only) and self._next.get(p, 0) < t
        }

    def wait(
        self, targets: Mapping[int, int], timeout_s: float, *, mine_only: bool = True
    ) -> dict[int, int]:
        """Block until every partition of ``targets`` folded here is folded up to its
        offset; return what is still missing when ``timeout_s`` passes first (empty:
        caught up). ``mine_only=False``: every partition of ``targets`` (the group routed
        the read here as to their owner, which this process may learn a moment later)."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while missing := self._behind(targets, mine_only):
                left = deadline - time.monotonic()
                if left <= 0:
                    return missing
                self._changed.wait(left)
        return {}


class CheckpointFolder:
    """Fold the checkpoints topic's partitions that ``held()`` names, into ``store``."""

    def __init__(
        self,
        topic: str,
        kafka: Mapping[str, object],
        store: CheckpointStore,
        held: Callable[[], Collection[int]],
        progress: FoldProgress,
        *,
        poll_timeout_s: float = 0.05,
    ) -> None:
        self._topic, self._poll_timeout_s = topic, poll_timeout_s
        # Where the folded rows go, and which partitions the projector holds right now.
        self._store, self._held = store, held
        self.progress = progress
        self._consumer: Consumer = plain_consumer(kafka)
        self._assigned: frozenset[int] = frozenset()

    def run(self, stop: threading.Event) -> None:
        """Fold until ``stop`` is set."""
        while not stop.is_set():
            self.run_once()

    def run_once(self) -> int:
        """Follow the assignment, then fold and commit one batch; return the records."""
        self._follow(frozenset(self._held()))
        # With nothing assigned the poll just waits out its timeout: the loop's pace.
        messages = consume_available(self._consumer, BATCH, self._poll_timeout_s)
        records = [r for m in messages if m.partition() in self._assigned and (r := self._raw(m))]
        if records:
            changes = fold_records(self._topic, records)
            self._store.commit(changes)
            self.progress.advanced(changes.positions)
        return len(records)

    def close(self) -> None:
        """Leave the partitions and close the consumer and the store's cursor."""
        self._consumer.close()
        self._store.close()

    def _follow(self, held: frozenset[int]) -> None:
        """Assign what the projector holds now (each from its committed position)."""
        if held == self._assigned:
            return
        positions = self._store.positions()
        gone = self._assigned - held
        new = held - self._assigned
        if gone:
            self._consumer.incremental_unassign([TopicPartition(self._topic, p) for p in gone])
        if new:
            starts = [
                TopicPartition(self._topic, p, positions.get(p, OFFSET_BEGINNING))
                for p in sorted(new)
            ]
            self._consumer.incremental_assign(starts)
        self._assigned = held
        self.progress.hold(held, positions)

    def _raw(self, msg: Message) -> RawRecord | None:
        err = msg.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                return None
            raise kafka_failure(f"folding {self._topic}", self._topic, err)
        partition, offset = msg.partition(), msg.offset()
        if partition is None or offset is None:
            raise KafkaOperationError(f"a record of {self._topic} carries no position")
        _, log_ms = msg.timestamp()
        return RawRecord(partition, offset, msg.key(), msg.value(), log_ms)


def refold(
    kafka: Mapping[str, object], topic: str, store: CheckpointStore, ends: Mapping[int, int]
) -> int:
    """Fold each partition of ``ends`` from the beginning up to (not including) its end
    offset into ``store``, as the live folder does; return the records folded."""
    total = 0
    for partition, end in sorted(ends.items()):
        batch: list[RawRecord] = []
        for msg in read_to_end(kafka, topic, partition):
            offset = msg.offset()
            if offset is None or offset >= end:
                break
            _, log_ms = msg.timestamp()
            batch.append(RawRecord(partition, offset, msg.key(), msg.value(), log_ms))
            if len(batch) >= BATCH:
                store.commit(fold_records(topic, batch))
                total, batch = total + len(batch), []
        if batch:
            store.commit(fold_records(topic, batch))
            total += len(batch)
    return total
