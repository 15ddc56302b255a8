"""Commit batches to DuckDB on a thread of their own, in order, merged.

Folding and publishing the next batches overlaps the DuckDB commit of the
previous ones, and every batch waiting when a commit starts is merged into it:
a DuckDB commit costs milliseconds whatever its size, so merging is what lets
the projection keep up with many small poll batches. Decisions are published
before their commit in any case; a crash before the commit refolds from the
last committed position and republishes identical records, so neither the
overlap nor the merge changes a guarantee.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

from oncelog.projector.store import Batch, Store

#: Back-pressure: the folding thread waits while this many records wait for a commit.
MAX_PENDING_RECORDS = 200_000


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
    ) -> None:
        self._store = store
        self._before_commit = before_commit
        self._on_committed = on_committed
        self._waiting: deque[Batch] = deque()
        self._pending = 0  # records submitted and not yet committed
        self._busy = False
        self._closing = False
        self._error: BaseException | None = None
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
            self._waiting.append(batch)
            self._pending += _size(batch)
            self._cond.notify_all()

    def drain(self) -> None:
        """Wait until every submitted batch is committed; raise a failed commit."""
        with self._cond:
            while (self._waiting or self._busy) and self._error is None:
                self._cond.wait()
            self._raise_pending()

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

    def _take(self) -> list[Batch] | None:
        with self._cond:
            while not self._waiting and not self._closing:
                self._cond.wait()
            if not self._waiting:
                return None
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
                self._store.commit(batch)
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
