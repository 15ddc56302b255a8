"""Two lanes of one producer role: records that someone waits on alone leave at once, the
others linger to share a produce request.

librdkafka's ``linger.ms`` is fixed per producer. At 0, a lone caller's record leaves at
once, but under load every process sends a record or two per produce request, and the
broker (and each fetch that follows) pays per request. Lingering a millisecond or two makes
the records of concurrent callers travel together, but a lone caller would then wait for
nobody. So a role keeps two producers: ``express`` (the configured linger, 0 by default)
for a record that is alone, and ``batched`` (``batch_linger_ms``) for the others.
Measured with ``bench_projector`` (64 workers) on an idle machine (docs/performance.md):
every producer at 0 ms, 1,259 / 1,405 cycles/s; both roles in two lanes lingering 2 ms
when not alone, 2,176 / 2,202; a lone sequential claim's p50 stays 1.8-2.0 ms (every
producer at a fixed 0.5 ms: 2.8-2.9 ms).

Order: while either lane holds unacknowledged records, every record takes that lane; only
when both are empty does ``alone`` choose. So no record can overtake an earlier one of
the other lane, and a role that sends from one thread keeps the order it sent in (a key's
snapshots on the compacted topic, a decision and its snapshot).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import Message

from oncelog.errors import KafkaOperationError
from oncelog.kafka.producer import FutureProducer
from oncelog.kafka.progress_watch import ProgressWatch


class Lanes:
    """Two lazily connected, equally durable producers: ``express`` and ``batched``."""

    def __init__(
        self,
        config: Mapping[str, Any],
        batch_linger_ms: float,
        *,
        on_error: Callable[[Message, KafkaOperationError], None] | None = None,
        watch: ProgressWatch | None = None,
    ) -> None:
        """``watch``: when :meth:`stalled` says so (a default :class:`ProgressWatch`)."""
        self._watch = watch or ProgressWatch()
        # No Python callback per delivered record: only a failure reaches on_error.
        self.express = FutureProducer(config, error_reports_only=True, on_error=on_error)
        # A linger the configuration names (ONCELOG_KAFKA_EXTRA_CONFIG) wins here too.
        batched = {"linger.ms": batch_linger_ms, **config}
        self.batched = FutureProducer(batched, error_reports_only=True, on_error=on_error)

    def lane(self, *, alone: bool) -> FutureProducer:
        """The lane still holding unacknowledged records (so nothing earlier is overtaken);
        with both empty, ``express`` when ``alone``, else ``batched``. Raises a pending
        delivery error of either lane first."""
        self.raise_pending()
        if self.express.queued():
            return self.express
        if self.batched.queued():
            return self.batched
        return self.express if alone else self.batched

    def raise_pending(self) -> None:
        """Raise the delivery error either lane holds, if any (once)."""
        self.express.raise_pending()
        self.batched.raise_pending()

    def acknowledged(self) -> bool:
        """Whether the broker acknowledged every record sent so far: none is queued, in
        flight or failed (without waiting, and without raising a pending failure)."""
        lanes = (self.express, self.batched)
        return all(lane.queued() == 0 and not lane.failed for lane in lanes)

    def settled(self) -> int:
        """Records of both lanes acknowledged or failed so far (grows with deliveries)."""
        return self.express.settled() + self.batched.settled()

    def wait(self, timeout_s: float) -> int:
        """Wait up to ``timeout_s`` for each lane; the records still unacknowledged."""
        return self.express.wait(timeout_s) + self.batched.wait(timeout_s)

    def renew(self) -> int:
        """Give each lane a new client with what its old one held (FutureProducer.renew)."""
        return self.express.renew() + self.batched.renew()

    @property
    def stall_s(self) -> float:
        """How long a record may stay held (neither acknowledged nor failed) before a renewal."""
        return self._watch.stall_s

    def stalled(self) -> bool:
        """Whether records the lanes held the watch's stall time ago are still neither
        acknowledged nor failed (:mod:`oncelog.kafka.progress_watch`): time to
        :meth:`renew`. Counts only, no broker call; asked now and then, off the hot path
        (a call that timed out)."""
        lanes = (self.express, self.batched)
        settled = sum(lane.settled() for lane in lanes)
        return self._watch.stalled(settled, sum(lane.sent() for lane in lanes))

    def flush(self, timeout_s: float) -> None:
        """Wait until every queued record of both lanes is acknowledged (or raise)."""
        self.express.flush(timeout_s)
        self.batched.flush(timeout_s)

    def close(self, timeout_s: float = 10.0) -> None:
        """Flush and release both."""
        try:
            self.express.close(timeout_s)
        finally:
            self.batched.close(timeout_s)
