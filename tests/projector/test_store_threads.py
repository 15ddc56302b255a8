"""A store opened with a thread bound or a checkpoint threshold runs DuckDB with it (serve does)."""

from __future__ import annotations

from pathlib import Path

import pytest

from oncelog.projector.store import Store
from oncelog.settings import Settings


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


def test_the_checkpoint_setting_defaults_to_32_mib_and_reads_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings().duckdb_checkpoint_mb == 32
    monkeypatch.setenv("ONCELOG_DUCKDB_CHECKPOINT_MB", "64")
    assert Settings().duckdb_checkpoint_mb == 64


def test_a_memory_limit_reaches_duckdb(tmp_path: Path) -> None:
    with Store(tmp_path / "small.duckdb", memory_limit_mb=100) as store:
        assert _setting(store, "memory_limit") == "100.0 MiB"
    with Store(tmp_path / "default.duckdb") as store:
        assert _setting(store, "memory_limit") != "100.0 MiB"


def test_the_memory_limit_is_unset_by_default_and_reads_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings().duckdb_memory_limit_mb is None
    monkeypatch.setenv("ONCELOG_DUCKDB_MEMORY_LIMIT_MB", "256")
    assert Settings().duckdb_memory_limit_mb == 256


def test_the_state_cache_bound_defaults_to_20000_and_reads_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings().projector_max_states == 20_000
    monkeypatch.setenv("ONCELOG_PROJECTOR_MAX_STATES", "5000")
    assert Settings().projector_max_states == 5000
