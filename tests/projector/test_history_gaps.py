"""Which partitions of a DuckDB file lack history below their position (no broker)."""

from __future__ import annotations

from pathlib import Path

from oncelog.projector.history_fill import Gap, history_gaps
from oncelog.projector.store import Batch, DeadLetter, Position, Store
from tests.projector.fold_factories import Op
from tests.projector.store_factories import fold_to_batch

TOPIC = "t.requests"


def test_a_whole_history_is_no_gap_and_a_restored_one_is(tmp_path: Path) -> None:
    a, b = Op(key_name="a"), Op(key_name="b")
    with Store(tmp_path / "live.duckdb") as live:
        # Offsets 0-2: two requests and a record refused into the dead letters.
        refused = DeadLetter(TOPIC, 0, 2, 3_000, "codec_error", "bad", 3)
        batch = fold_to_batch(live, 0, [(a.claim("t1"), 1_000), (b.claim("t2"), 2_000)])
        live.commit(batch)
        live.commit(Batch([], [], [refused], {0: Position(3, 2_000)}))
        assert history_gaps(live, TOPIC, {0: 3}, {0: 0}) == []
        with Store(tmp_path / "restored.duckdb") as restored:
            restored.restore_partition(0, batch.snapshots, Position(3, 2_000))
            assert history_gaps(restored, TOPIC, {0: 3}, {0: 0}) == [Gap(0, 3, 3)]
            # Retention deleted the start of the log: nothing to refold from.
            assert history_gaps(restored, TOPIC, {0: 3}, {0: 1}) == []
            # A dead letter of another topic is not a record of this one.
            assert history_gaps(live, "other.requests", {0: 3}, {0: 0}) == [Gap(0, 3, 1)]


def test_requests_pruned_to_the_archive_are_held_not_missing(tmp_path: Path) -> None:
    a, b = Op(key_name="a"), Op(key_name="b")
    with Store(tmp_path / "live.duckdb") as live:
        live.commit(fold_to_batch(live, 0, [(a.claim("t1"), 1_000), (b.claim("t2"), 2_000)]))
        con = live.cursor()
        # What `oncelog archive prune` does to the first request: listed, then deleted.
        con.execute(
            "INSERT INTO archived_rows VALUES ('requests', 0, 0, 0, 1, '/a/x.parquet', 'x')"
        )
        con.execute('DELETE FROM requests WHERE "offset" = 0')
        assert history_gaps(live, TOPIC, {0: 2}, {0: 0}) == []
        # Requests pruned from another partition hold nothing here.
        con.execute("UPDATE archived_rows SET partition = 1")
        assert history_gaps(live, TOPIC, {0: 2}, {0: 0}) == [Gap(0, 2, 1)]
