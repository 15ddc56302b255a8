"""The committer merges batches until enough records or time accumulate, or a drain."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from oncelog.errors import DiskFullError
from oncelog.projector.committer import Committer
from oncelog.projector.store import Batch, Position


class _Store:
    """Records the batches committed, in ``order`` too when given; signals each commit."""

    def __init__(self, order: list[str] | None = None) -> None:
        self.commits: list[Batch] = []
        self.committed = threading.Event()
        self._order = order

    def commit(self, batch: Batch) -> None:
        # Recorded inside the commit itself: a flush that ran after the store's commit
        # (a broken crash-safety order) shows up as ["commit", "flush"].
        if self._order is not None:
            self._order.append("commit")
        self.commits.append(batch)
        self.committed.set()


def _batch(partition: int, next_offset: int) -> Batch:
    return Batch([], [], [], {partition: Position(next_offset, None)})


def _committer(store: _Store, **kwargs: Any) -> Committer:
    return Committer(store, **kwargs)  # type: ignore[arg-type]


def test_drain_commits_everything_waiting_in_one_merged_commit() -> None:
    store = _Store()
    committer = _committer(store, commit_interval_s=3600.0)
    committer.submit(_batch(0, 5))
    committer.submit(_batch(1, 7))
    committer.submit(_batch(0, 9))
    assert not store.committed.is_set()  # nothing is due for an hour
    committer.drain()
    assert [b.positions for b in store.commits] == [{0: Position(9, None), 1: Position(7, None)}]
    committer.close()


def test_a_waiting_batch_is_committed_once_the_interval_has_passed() -> None:
    store = _Store()
    committer = _committer(store, commit_interval_s=0.05)
    committer.submit(_batch(0, 1))
    assert store.committed.wait(timeout=10)
    assert [b.positions for b in store.commits] == [{0: Position(1, None)}]
    committer.close()


def test_flush_runs_before_every_commit() -> None:
    order: list[str] = []
    store = _Store(order)
    committer = _committer(
        store, commit_interval_s=3600.0, before_commit=lambda: order.append("flush")
    )
    committer.submit(_batch(0, 1))
    committer.drain()
    committer.submit(_batch(0, 2))
    committer.drain()
    committer.close()
    # Publish-before-commit: each commit is preceded by its own flush.
    assert order == ["flush", "commit", "flush", "commit"]


class _FullStore(_Store):
    """Its first commit waits for ``release`` and then fails: the volume is full."""

    def __init__(self) -> None:
        super().__init__()
        self.started = threading.Event()
        self.release = threading.Event()

    def commit(self, batch: Batch) -> None:
        if not self.started.is_set():
            self.started.set()
            assert self.release.wait(timeout=10)
            raise DiskFullError("commit failed on /full/live.duckdb: no space left on device")
        super().commit(batch)


def test_nothing_is_committed_after_a_failed_commit() -> None:
    # Committing a later batch after a failed one would store positions past records
    # that never reached DuckDB: they would be missing for good (the disk-full drill).
    store = _FullStore()
    committer = _committer(store, commit_interval_s=0.0)
    committer.submit(_batch(0, 5))
    assert store.started.wait(timeout=10)  # the first commit is under way ...
    committer.submit(_batch(0, 9))  # ... and a later batch waits behind it
    store.release.set()
    with pytest.raises(DiskFullError):
        committer.close()  # drains: raises the failure, commits nothing after it
    assert store.commits == []
