"""A store opened with a thread bound or a checkpoint threshold runs DuckDB with it (serve does)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from oncelog.identity.partitioner import partition_for
from oncelog.projector.store import Store
from oncelog.schemas.models import Request
from oncelog.settings import Settings
from oncelog.testing.clock import ManualClock
from tests.projector.fold_factories import Op
from tests.projector.store_factories import feed


def _setting(store: Store, name: str) -> str:
    row = store._con.execute("SELECT current_setting(?)", [name]).fetchone()
    assert row is not None
    return str(row[0])


def _threads(store: Store) -> int:
    return int(_setting(store, "threads"))


def test_a_thread_bound_reaches_duckdb(tmp_path: Path) -> None:
    with Store(tmp_path / "one.duckdb", threads=1) as store:
        assert _threads(store) == 1


def test_without_a_bound_duckdb_keeps_its_default(tmp_path: Path) -> None:
    with Store(tmp_path / "default.duckdb") as store:
        assert _threads(store) >= 1


def test_the_setting_defaults_to_one_thread_and_reads_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings().duckdb_threads == 1
    monkeypatch.setenv("ONCELOG_DUCKDB_THREADS", "2")
    assert Settings().duckdb_threads == 2


def _checkpoint_threshold(store: Store) -> str:
    return _setting(store, "checkpoint_threshold")


def test_a_checkpoint_threshold_reaches_duckdb(tmp_path: Path) -> None:
    with Store(tmp_path / "big.duckdb", checkpoint_mb=256) as store:
        assert _checkpoint_threshold(store) == "256.0 MiB"
    with Store(tmp_path / "default.duckdb") as store:
        assert _checkpoint_threshold(store) != "256.0 MiB"


def test_a_memory_limit_reaches_duckdb(tmp_path: Path) -> None:
    with Store(tmp_path / "small.duckdb", memory_limit_mb=100) as store:
        assert _setting(store, "memory_limit") == "100.0 MiB"
    with Store(tmp_path / "default.duckdb") as store:
        assert _setting(store, "memory_limit") != "100.0 MiB"


@dataclass
class _Timed:
    """A store checkpointed every 60 s of ``clock``, its log file, and one operation."""

    store: Store
    clock: ManualClock
    wal: Path
    op: Op
    partition: int

    def feed(self, request: Request, ts_ms: int) -> None:
        feed(self.store, self.partition, [(request, ts_ms)])

    def log_is_empty(self) -> bool:
        return not self.wal.exists() or self.wal.stat().st_size == 0

    def status(self) -> str:
        return self.store.load_states([self.op.operation_id])[self.op.operation_id].status.name


@contextmanager
def _timed_store(tmp_path: Path, name: str) -> Iterator[_Timed]:
    clock = ManualClock(start_ms=0)
    path = tmp_path / f"{name}.duckdb"
    op = Op(key_name=name)
    with Store(path, checkpoint_every_s=60.0, clock=lambda: clock.now_ms() / 1000) as store:
        wal = path.with_name(path.name + ".wal")
        yield _Timed(store, clock, wal, op, partition_for(op.channel_id, 3))


def test_a_commit_checkpoints_once_the_interval_passed(tmp_path: Path) -> None:
    with _timed_store(tmp_path, "timed") as timed:
        timed.feed(timed.op.claim("t1"), 1_000)
        assert not timed.log_is_empty()  # the rows are in the log only
        timed.clock.advance(61)
        timed.feed(timed.op.complete("t1"), 2_000)
        assert timed.log_is_empty()
        assert timed.status() == "COMPLETED"


def test_without_an_interval_a_commit_leaves_the_log_to_its_size(tmp_path: Path) -> None:
    path = tmp_path / "sized.duckdb"
    op = Op(key_name="sized")
    with Store(path) as store:
        feed(store, partition_for(op.channel_id, 3), [(op.claim("t1"), 1_000)])
        assert path.with_name(path.name + ".wal").stat().st_size > 0


@pytest.mark.parametrize(
    ("field", "default", "variable", "value"),
    [
        ("duckdb_checkpoint_mb", 32, "ONCELOG_DUCKDB_CHECKPOINT_MB", 64),
        ("duckdb_checkpoint_interval_s", 300.0, "ONCELOG_DUCKDB_CHECKPOINT_INTERVAL_S", 30.0),
        ("duckdb_memory_limit_mb", None, "ONCELOG_DUCKDB_MEMORY_LIMIT_MB", 256),
        ("projector_max_states", 20_000, "ONCELOG_PROJECTOR_MAX_STATES", 5000),
    ],
)
def test_a_memory_setting_has_its_default_and_reads_its_variable(
    monkeypatch: pytest.MonkeyPatch, field: str, default: object, variable: str, value: object
) -> None:
    assert getattr(Settings(), field) == default
    monkeypatch.setenv(variable, str(value))
    assert getattr(Settings(), field) == value


def test_a_timed_checkpoint_waits_while_another_writer_is_in_a_transaction(
    tmp_path: Path,
) -> None:
    """serve's other writers (the checkpoints' projection) share the file: a timed
    checkpoint that meets one of their transactions is put off, not fatal."""
    with _timed_store(tmp_path, "shared") as timed:
        other = timed.store.cursor()
        other.execute("BEGIN TRANSACTION")
        other.execute("CREATE TABLE scratch (x INTEGER)")
        other.execute("INSERT INTO scratch VALUES (1)")
        timed.feed(timed.op.claim("t1"), 1_000)
        timed.clock.advance(61)
        timed.feed(timed.op.heartbeat("t1"), 2_000)  # due, but the other writer is open
        assert not timed.log_is_empty()
        other.execute("COMMIT")
        timed.feed(timed.op.complete("t1"), 3_000)  # the put-off checkpoint runs now
        assert timed.log_is_empty()
        assert timed.status() == "COMPLETED"
