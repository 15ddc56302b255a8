"""Commit batches to DuckDB on a thread of their own, in order, merged.

Folding and publishing the next batches overlaps the DuckDB commit of the
previous ones, and batches are merged into one commit: a DuckDB commit costs
milliseconds whatever its size, so the committer waits until ``commit_records``
records or ``commit_interval_s`` seconds have accumulated (or a caller drains)
and commits them all at once. Under a latency-bound load of small poll batches
that is what keeps the per-request cost of DuckDB small. Decisions are
published before their commit in any case, the producer is flushed before each
commit, and each commit stores the positions with the states they produced; a
crash before the commit refolds from the last committed position and
republishes identical records, so neither the overlap nor the merge changes a
guarantee. Queries over DuckDB lag the decisions by up to the interval.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Mapping

from oncelog.projector.store import Batch, Store

#: Back-pressure: the folding thread waits while this many records wait for a commit.
MAX_PENDING_RECORDS = 200_000
#: Commit once this many records wait, or the oldest has waited this long.
COMMIT_RECORDS = 20_000
COMMIT_INTERVAL_S = 1.0


def merge(batches: list[Batch]) -> Batch:
    """One batch equal to committing ``batches`` one after another."""
    if len(batches) == 1:
        return batches[0]
    merged = Batch([], [], [], {})
    for batch in batches:
        merged.audit.extend(batch.audit)
        merged.snapshots.extend(batch.snapshots)
        merged.dead_letters.extend(batch.dead_letters)
        merged.positions.update(batch.positions)
    return merged


def _size(batch: Batch) -> int:
    return len(batch.audit) + len(batch.dead_letters)


class Committer:
    """The batches waiting for DuckDB and the one thread that commits them."""

    def __init__(
        self,
        store: Store,
        on_committed: Callable[[Batch], None] | None = None,
        *,
        before_commit: Callable[[], None] | None = None,
        commit_records: int = COMMIT_RECORDS,
        commit_interval_s: float = COMMIT_INTERVAL_S,
        committed: Mapping[int, int] | None = None,
        on_commit_seconds: Callable[[float], None] | None = None,
    ) -> None:
        """``on_commit_seconds`` hears how long each DuckDB commit took (the metrics)."""
        self._store = store
        self._on_commit_seconds = on_commit_seconds
        self._commit_records = commit_records
        self._commit_interval_s = commit_interval_s
        self._oldest = 0.0  # time.monotonic() of the oldest waiting batch
        self._draining = 0  # callers of drain(): commit at once
        self._before_commit = before_commit
        self._on_committed = on_committed
        self._waiting: deque[Batch] = deque()
        self._pending = 0  # records submitted and not yet committed
        self._busy = False
        self._closing = False
        self._error: BaseException | None = None
        # partition -> the next offset committed here: what wait_committed() waits on
        self._committed: dict[int, int] = dict(committed or {})
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="oncelog-commit", daemon=True)
        self._thread.start()

    def submit(self, batch: Batch) -> None:
        """Queue a batch; wait while too much is pending; raise a failed commit first.

        ``before_commit`` runs before each commit: the projector passes a flush
        of its producer, so a committed position always means "published".
        """
        with self._cond:
            self._raise_pending()
            while self._pending >= MAX_PENDING_RECORDS and self._error is None:
                self._cond.wait()
            self._raise_pending()
            first = not self._waiting
            if first:
                self._oldest = time.monotonic()
            self._waiting.append(batch)
            self._pending += _size(batch)
            # The thread only needs waking when its deadline appears or the size is reached;
            # waking it for every small batch costs a thread switch per poll.
            if first or self._pending >= self._commit_records:
                self._cond.notify_all()

    def drain(self) -> None:
        """Wait until every submitted batch is committed; raise a failed commit."""
        with self._cond:
            self._draining += 1
            self._cond.notify_all()
            try:
                while (self._waiting or self._busy) and self._error is None:
                    self._cond.wait()
            finally:
                self._draining -= 1
            self._raise_pending()

    def wait_committed(self, partition: int, offset: int, timeout_s: float) -> bool:
        """Block until the record at ``offset`` of ``partition`` is committed; False when
        ``timeout_s`` passes first. Raises a failed commit."""
        with self._cond:
            done = self._cond.wait_for(
                lambda: self._committed.get(partition, 0) > offset or self._error is not None,
                timeout_s,
            )
            self._raise_pending()
            return done

    def close(self) -> None:
        """Drain, then stop the thread."""
        try:
            self.drain()
        finally:
            with self._cond:
                self._closing = True
                self._cond.notify_all()
            self._thread.join(timeout=60)

    def _raise_pending(self) -> None:
        if self._error is not None:
            raise self._error

    def _due_in(self) -> float | None:
        """Seconds until the waiting batches are due (0: now); None while nothing waits."""
        if not self._waiting:
            return None
        if self._closing or self._draining or self._pending >= self._commit_records:
            return 0.0
        return self._oldest + self._commit_interval_s - time.monotonic()

    def _take(self) -> list[Batch] | None:
        with self._cond:
            while True:
                if self._error is not None:
                    # A failed commit (a full disk) is the last: a later batch committed
                    # after it would move the positions past records that never reached
                    # DuckDB. What waits is refolded from the last committed position.
                    return None
                due = self._due_in()
                if due is None and self._closing:
                    return None
                if due is not None and due <= 0:
                    break
                self._cond.wait(due)
            batches = list(self._waiting)
            self._waiting.clear()
            self._busy = True
            return batches

    def _loop(self) -> None:
        while (batches := self._take()) is not None:
            try:
                if self._before_commit is not None:
                    self._before_commit()
                batch = merge(batches)
                began = time.perf_counter()
                self._store.commit(batch)
                if self._on_commit_seconds is not None:
                    self._on_commit_seconds(time.perf_counter() - began)
                with self._cond:
                    for p, position in batch.positions.items():
                        known = self._committed.get(p, 0)
                        self._committed[p] = max(known, position.next_offset)
                if self._on_committed is not None:
                    self._on_committed(batch)
            except BaseException as exc:  # handed to the folding thread, which stops
                with self._cond:
                    self._error = exc
            finally:
                with self._cond:
                    self._busy = False
                    self._pending -= sum(_size(b) for b in batches)
                    self._cond.notify_all()
