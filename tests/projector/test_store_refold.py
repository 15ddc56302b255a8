"""History has no key: a refold's re-commits and a restore's backward position add no row twice.

A crashed projector refolds from its committed position and may commit batches again
(merged or not, in any grouping); a restore may set a position backwards. Either way
the tables must equal those of committing every batch exactly once, in order.
"""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from oncelog.projector.committer import merge
from oncelog.projector.store import Batch, Position, Store
from oncelog.schemas.models import Request
from tests.projector.fold_factories import Op
from tests.projector.store_factories import feed, key_history

Records = list[tuple[Request, int]]


def _records(steps: list[int]) -> Records:
    """Per step an operation: claim, then (by its number) heartbeat and complete; number 3
    asks for approval first and is approved (the intent and the decision are versions too)."""
    records: Records = []
    for i, n in enumerate(steps):
        op = Op(key_name=f"k{i}")
        if n == 3:
            records.extend([(op.ask(f"t{i}"), 500 + i), (op.approve(), 700 + i)])
        records.append((op.claim(f"t{i}"), 1_000 + i))
        if n >= 1:
            records.append((op.heartbeat(f"t{i}"), 2_000 + i))
        if n >= 2:
            records.append((op.complete(f"t{i}"), 3_000 + i))
    return records


def _tables(store: Store) -> dict[str, list[tuple[Any, ...]]]:
    con = store.cursor()
    return {
        table: con.execute(f"SELECT * FROM {table} ORDER BY ALL").fetchall()
        for table in ("history", "executions", "requests", "positions")
    }


def _feed_in(store: Store, records: Records, cuts: list[int]) -> list[Batch]:
    bounds = sorted({0, len(records), *(c % (len(records) + 1) for c in cuts)})
    return [feed(store, 0, records[a:b]) for a, b in itertools.pairwise(bounds)]


@settings(max_examples=25)
@given(
    steps=st.lists(st.integers(0, 3), min_size=1, max_size=6),
    cuts=st.lists(st.integers(0, 20), max_size=4),
    again=st.lists(st.tuples(st.integers(0, 10), st.integers(1, 3)), min_size=1, max_size=4),
)
def test_committing_batches_again_in_any_grouping_adds_nothing(
    steps: list[int], cuts: list[int], again: list[tuple[int, int]]
) -> None:
    records = _records(steps)
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "l.duckdb") as store:
        batches = _feed_in(store, records, cuts)
        once = _tables(store)
        for start, length in again:  # a refold commits a run of old batches, merged
            first = start % len(batches)
            store.commit(merge(batches[first : first + length]))
        assert _tables(store) == once
        changed = sum(len(b.snapshots) for b in batches)
        assert len(once["history"]) == changed


@settings(max_examples=15)
@given(
    steps=st.lists(st.integers(0, 2), min_size=2, max_size=5),
    cuts=st.lists(st.integers(0, 15), min_size=1, max_size=3),
)
def test_a_restore_that_sets_the_position_back_then_a_refold_equals_folding_once(
    steps: list[int], cuts: list[int]
) -> None:
    records = _records(steps)
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "l.duckdb") as store:
        batches = _feed_in(store, records, cuts)
        once = _tables(store)
        # Back to the end of the first batch, from what the changelog held then.
        kept = batches[0]
        position = kept.positions[0]
        store.restore_partition(0, kept.snapshots, position)
        assert store.positions() == {0: position}
        assert all(row[5] < position.next_offset for row in _tables(store)["history"])
        feed(store, 0, records[position.next_offset :])  # folded again from there
        assert _tables(store) == once


def test_a_restore_adds_only_the_versions_missing(tmp_path: Path) -> None:
    records = _records([2, 1])
    with Store(tmp_path / "l.duckdb") as store:
        batch = feed(store, 0, records)
        once = _tables(store)
        store.restore_partition(0, batch.snapshots, Position(len(records), 3_000))
        assert _tables(store) == once


def _key_history(path: Path) -> None:
    import duckdb  # noqa: PLC0415

    with duckdb.connect(str(path)) as con:
        con.execute("DROP INDEX history_operation")
        key_history(con)
        con.execute("CREATE INDEX history_operation ON history (operation_id)")


def test_an_old_keyed_history_with_rows_past_its_position_takes_the_refold(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.duckdb"
    records = _records([2, 2])
    with Store(path) as store:
        first = feed(store, 0, records[:3])
        feed(store, 0, records[3:])
        once = _tables(store)
    _key_history(path)
    with Store(path) as store:
        # What an older restore could leave: the position and the current rows set back (the
        # second operation began after it), the history past it kept.
        back = first.positions[0]
        con = store.cursor()
        con.execute(
            "UPDATE positions SET next_offset = ?, clock_ms = ?", [back.next_offset, back.clock_ms]
        )
        con.execute("DELETE FROM executions WHERE source_offset >= ?", [back.next_offset])
        feed(store, 0, records[back.next_offset :])  # refolded: no key violation, no duplicate
        assert _tables(store) == once


def test_a_store_takes_a_commit_right_after_it_opens(tmp_path: Path) -> None:
    """Nothing read first (as `bench_commit` does): opening leaves no unfinished result."""
    with Store(tmp_path / "a.duckdb") as scratch:
        batch = feed(scratch, 0, _records([2]))
    with Store(tmp_path / "b.duckdb") as store:
        store.commit(batch)
        assert store.positions() == batch.positions
