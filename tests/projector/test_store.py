"""The DuckDB projection: round trips, history validity, idempotency, restore, atomicity."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from oncelog.errors import CodecError, StoreError
from oncelog.identity.tokens import token_fingerprint
from oncelog.projector.state_blob import decode_state, encode_state
from oncelog.projector.store import Batch, DeadLetter, Position, Store
from oncelog.referee.fold import fold
from oncelog.schemas.models import ExecutionState, Status
from tests.projector.fold_factories import LEASE_MS, RETENTION_MS, Op
from tests.projector.store_factories import feed, fold_to_batch


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with Store(tmp_path / "ledger.duckdb") as s:
        yield s


def count(store: Store, table: str) -> int:
    row = store.cursor().execute(f"SELECT count(*) FROM {table}").fetchone()
    assert row is not None
    return int(row[0])


def history(store: Store, op: str) -> list[tuple[int, int, int | None, str]]:
    return [
        (int(v), int(f), t, str(s))
        for v, f, t, s in store.cursor()
        .execute(
            "SELECT version, valid_from_offset, "
            "lead(valid_from_offset) OVER (ORDER BY version), status FROM history "
            "WHERE operation_id = ? ORDER BY version",
            [op],
        )
        .fetchall()
    ]


def test_states_round_trip_exactly(store: Store) -> None:
    op = Op()
    records = [(op.claim("t1"), 1_000), (op.heartbeat("t1"), 2_000), (op.complete("t1"), 3_000)]
    feed(store, 0, records)
    expected: ExecutionState | None = None
    for request, ts in records:
        expected, _ = fold(expected, request, ts)
    assert store.load_states([op.operation_id, "unknown"]) == {op.operation_id: expected}
    assert store.current_states() == [expected]
    assert store.current_states(1) == []
    assert store.positions() == {0: Position(3, 3_000)}


def test_load_states_of_nothing_is_empty(store: Store) -> None:
    assert store.load_states([]) == {}


def test_history_valid_to_is_derived_across_batches(store: Store) -> None:
    op = Op()
    feed(store, 0, [(op.claim("t1"), 1_000)])
    assert history(store, op.operation_id) == [(1, 0, None, "CLAIMED")]
    first = store.cursor().execute("SELECT * FROM history").fetchall()
    feed(store, 0, [(op.heartbeat("t1"), 2_000), (op.complete("t1"), 3_000)])
    assert history(store, op.operation_id) == [
        (1, 0, 1, "CLAIMED"),
        (2, 1, 2, "CLAIMED"),
        (3, 2, None, "COMPLETED"),
    ]
    # Append-only: the first version's row is exactly as it was written.
    assert store.cursor().execute("SELECT * FROM history WHERE version = 1").fetchall() == first


def test_a_file_with_the_old_valid_to_column_still_takes_commits(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    with Store(path) as store:
        store.cursor().execute("ALTER TABLE history ADD COLUMN valid_to_offset BIGINT")
    with Store(path) as store:
        op = Op()
        feed(store, 0, [(op.claim("t1"), 1_000), (op.complete("t1"), 2_000)])
        assert history(store, op.operation_id) == [(1, 0, 1, "CLAIMED"), (2, 1, None, "COMPLETED")]


def test_unchanged_decisions_are_audited_but_add_no_version(store: Store) -> None:
    op = Op()
    steps = [(op.claim("t1"), 1_000), (op.complete("t1"), 1_200)]
    feed(store, 0, [*steps, (op.claim("t2", worker="w2"), 1_500)])
    assert count(store, "history") == 2
    rows = (
        store.cursor()
        .execute('SELECT "offset", outcome, changed, worker_id FROM requests ORDER BY "offset"')
        .fetchall()
    )
    assert rows[0] == (0, "claimed", True, "w1")
    assert rows[2] == (2, "replayed", False, "w2")


def test_an_in_progress_answer_is_a_version_that_only_grows_the_retry_memory(
    store: Store,
) -> None:
    op = Op()
    feed(store, 0, [(op.claim("t1"), 1_000), (op.claim("t2", worker="w2", rid="b"), 1_500)])
    assert history(store, op.operation_id) == [(1, 0, 1, "CLAIMED"), (2, 1, None, "CLAIMED")]
    rows = (
        store.cursor()
        .execute('SELECT "offset", outcome, changed, worker_id FROM requests ORDER BY "offset"')
        .fetchall()
    )
    assert rows == [(0, "claimed", True, "w1"), (1, "in_progress", True, "w2")]


def test_stale_completion_is_flagged_in_the_audit(store: Store) -> None:
    op = Op()
    feed(
        store,
        0,
        [
            (op.claim("t1"), 1_000),
            (op.claim("t2", worker="w2"), 1_000 + LEASE_MS),
            (op.complete("t1"), 1_000 + LEASE_MS + 1),
        ],
    )
    row = (
        store.cursor()
        .execute(
            "SELECT outcome, duplicate_effect_suspected, token_fp, epoch, state_epoch "
            'FROM requests WHERE "offset" = 2'
        )
        .fetchone()
    )
    # The sender's attempt (t1's grant, epoch 1), and apart the state it met (epoch 2).
    assert row == ("stale_claim", True, token_fingerprint("t1"), 1, 2)


def test_recommitting_a_batch_adds_nothing(store: Store) -> None:
    op = Op()
    dead = DeadLetter("oncelog.requests", 0, 2, 5, "codec_error", "bad magic", 3)
    batch = feed(store, 0, [(op.claim("t1"), 1_000), (op.complete("t1"), 2_000)], [dead])
    before = {t: count(store, t) for t in ("requests", "history", "executions", "dead_letters")}
    state = store.load_states([op.operation_id])
    store.commit(batch)
    after = {t: count(store, t) for t in ("requests", "history", "executions", "dead_letters")}
    assert before == after == {"requests": 2, "history": 2, "executions": 1, "dead_letters": 1}
    assert store.load_states([op.operation_id]) == state
    assert history(store, op.operation_id) == [(1, 0, 1, "CLAIMED"), (2, 1, None, "COMPLETED")]


def test_an_old_batch_never_moves_state_or_position_backwards(store: Store) -> None:
    op = Op()
    first = feed(store, 0, [(op.claim("t1"), 1_000)])
    feed(store, 0, [(op.complete("t1"), 2_000)])
    store.commit(first)
    [state] = store.current_states()
    assert state.status is Status.COMPLETED
    assert store.positions() == {0: Position(2, 2_000)}
    assert history(store, op.operation_id) == [(1, 0, 1, "CLAIMED"), (2, 1, None, "COMPLETED")]


def test_a_failing_commit_changes_nothing(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    op = Op()
    feed(store, 0, [(op.claim("t1"), 1_000)])
    batch = fold_to_batch(store, 0, [(op.complete("t1"), 2_000)])

    def explode(self: Store, statement: str) -> None:
        raise RuntimeError("crash after the other writes")

    monkeypatch.setattr(Store, "_write_positions", explode)
    with pytest.raises(RuntimeError):
        store.commit(batch)
    assert store.positions() == {0: Position(1, 1_000)}
    assert count(store, "requests") == 1
    assert history(store, op.operation_id) == [(1, 0, None, "CLAIMED")]
    assert store.current_states()[0].status is Status.CLAIMED


def test_a_database_error_is_a_store_error_and_rolls_back(store: Store) -> None:
    store.cursor().execute("DROP TABLE dead_letters")
    batch = fold_to_batch(store, 0, [(Op().claim("t1"), 1_000)])
    with pytest.raises(StoreError):
        store.commit(batch)
    assert store.positions() == {}
    assert count(store, "executions") == 0


def test_restore_partition_equals_the_live_state(tmp_path: Path, store: Store) -> None:
    a, b, other = Op(key_name="a"), Op(key_name="b"), Op(channel_id="run-7", key_name="c")
    snapshots = []
    for records in (
        [(a.claim("t1"), 1_000), (b.claim("t2"), 1_100)],
        [(a.complete("t1"), 2_000), (b.heartbeat("t2"), 2_100)],
    ):
        snapshots += feed(store, 0, records).snapshots
    feed(store, 1, [(other.claim("t3", rid="r3"), 1_000)])

    with Store(tmp_path / "restored.duckdb") as restored:
        feed(restored, 0, [(Op(key_name="gone").claim("t9"), 500)])  # replaced by the restore
        feed(restored, 1, [(other.claim("t3", rid="r3"), 1_000)])
        restored.restore_partition(0, snapshots, store.positions()[0])
        assert restored.current_states(0) == store.current_states(0)
        assert restored.current_states(1) == store.current_states(1)
        assert restored.positions() == store.positions()
        # Compaction kept only the last versions: they are current, with no successor.
        assert history(restored, a.operation_id)[-1] == (2, 2, None, "COMPLETED")
        restored.restore_partition(0, snapshots, store.positions()[0])  # idempotent
        assert count(restored, "history") == 4


def test_restore_rejects_a_snapshot_of_another_partition(store: Store) -> None:
    snapshots = fold_to_batch(store, 1, [(Op().claim("t1"), 1_000)]).snapshots
    with pytest.raises(StoreError):
        store.restore_partition(0, snapshots, Position(1, 1_000))


def test_expiry_candidates_are_completed_rows_past_their_expiry(store: Store) -> None:
    done, busy = Op(key_name="done"), Op(key_name="busy")
    feed(
        store,
        3,
        [(done.claim("t1"), 1_000), (done.complete("t1"), 2_000), (busy.claim("t2"), 2_000)],
    )
    due = 2_000 + RETENTION_MS
    assert store.expiry_candidates(due - 1) == []
    expected = (3, done.operation_id, done.channel_id, done.key_name)
    assert store.expiry_candidates(due) == [expected]
    assert store.expiry_candidates(due, limit=0) == []
    feed(store, 3, [(done.sweep(), due)])
    assert store.expiry_candidates(due + 1) == []
    assert store.load_states([done.operation_id])[done.operation_id].status is Status.EXPIRED


def test_cursor_reads_from_another_thread(store: Store) -> None:
    feed(store, 0, [(Op().claim("t1"), 1_000)])
    seen: list[Any] = []
    cursor = store.cursor()
    thread = threading.Thread(
        target=lambda: seen.extend(cursor.execute("SELECT count(*) FROM history").fetchall())
    )
    thread.start()
    thread.join()
    assert seen == [(1,)]


def test_read_only_store_reads_what_was_written(tmp_path: Path) -> None:
    path = tmp_path / "ledger.duckdb"
    with Store(path) as writer:
        feed(writer, 0, [(Op().claim("t1"), 1_000)])
        states = writer.current_states()
    with Store(path, read_only=True) as reader:
        assert reader.current_states() == states
        with pytest.raises(StoreError):
            reader.commit(Batch([], [], [], {0: Position(9, None)}))


def test_state_blob_round_trip_and_garbage() -> None:
    op = Op()
    state, _ = fold(None, op.claim("t1"), 1_000)
    assert state is not None
    assert decode_state(encode_state(state)) == state
    for garbage in (b"", b"\xc3\x01", encode_state(state)[:-3], b"x" * 40):
        with pytest.raises(CodecError):
            decode_state(garbage)


def test_a_restore_writes_what_it_is_also_given_in_its_one_transaction(
    tmp_path: Path, store: Store
) -> None:
    """The history refolded for a restore goes in with the states and the position: a
    reader never sees the restored position without it, and a failure writes neither."""
    a = Op(key_name="a")
    batch = feed(store, 0, [(a.claim("t1"), 1_000), (a.complete("t1"), 2_000)])
    end = store.positions()[0]

    def add(con: Any) -> None:
        con.execute("INSERT INTO dead_letters SELECT 'x', 0, 0, 0, 'c', 'm', 0")

    def fail(con: Any) -> None:
        add(con)
        raise RuntimeError("the refill failed")

    with Store(tmp_path / "restored.duckdb") as restored:
        with pytest.raises(RuntimeError):
            restored.restore_partition(0, batch.snapshots, end, also=fail)
        assert restored.positions() == {}
        assert count(restored, "dead_letters") == 0
        assert count(restored, "executions") == 0
        restored.restore_partition(0, batch.snapshots, end, also=add)
        assert restored.positions() == {0: end}
        assert count(restored, "dead_letters") == 1
