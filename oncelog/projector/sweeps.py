"""Retention sweeps: the projector writes them into the requests log.

Expiry is decided by the fold, at the sweep record's own log time, so it is in
the log and every refold agrees. The wall clock only decides *when* a sweep
is worth writing; a sweep that arrives early is judged "still completed" and
simply sent again later.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Collection, Iterable, Sequence

from oncelog.kafka.producer import FutureProducer
from oncelog.projector.store import AuditEntry, StoreReader
from oncelog.schemas.codec import encode_request
from oncelog.schemas.models import Kind, Request, Sweep


class SweepScheduler:
    """Send at most one pending sweep per expired operation, every ``interval_s``."""

    def __init__(self, topic: str, interval_s: float) -> None:
        self._topic = topic
        self._interval_s = interval_s
        self._next = 0.0
        # operation id -> its partition: a revoked partition's pending sweeps are forgotten
        self._pending: dict[str, int] = {}

    def maybe_send(
        self, store: StoreReader, producer: FutureProducer, partitions: Sequence[int]
    ) -> int:
        """Write sweeps for completed results past retention; return how many."""
        now = time.monotonic()
        if now < self._next or not partitions:
            return 0
        self._next = now + self._interval_s
        owned = set(partitions)
        sent = 0
        for partition, op, channel, key in store.expiry_candidates(int(time.time() * 1000)):
            if partition not in owned or op in self._pending:
                continue
            request = Request(str(uuid.uuid4()), op, channel, key, None, Sweep())
            producer.send_nowait(self._topic, partition, op.encode(), encode_request(request))
            self._pending[op] = partition
            sent += 1
        return sent

    def folded(self, audit: Iterable[AuditEntry]) -> None:
        """Forget the sweeps that were judged, so an early one can be sent again."""
        for entry in audit:
            if entry.request.kind is Kind.SWEEP:
                self._pending.pop(entry.request.operation_id, None)

    def drop_partitions(self, partitions: Collection[int]) -> None:
        """Forget the pending sweeps of revoked partitions.

        Another member judges them now; were the partition to come back (restored,
        past those sweeps), a sweep still marked pending would never be sent again.
        """
        gone = set(partitions)
        self._pending = {op: p for op, p in self._pending.items() if p not in gone}
