"""The projection's file: written in row groups of ROW_GROUP_ROWS, read like any DuckDB file."""

from __future__ import annotations

import logging
import math
from pathlib import Path

import duckdb
import pytest

from oncelog.errors import StoreError
from oncelog.projector import store_file
from oncelog.projector.store import Store

ROWS = 40_000


def _fill(con: duckdb.DuckDBPyConnection) -> None:
    """ROWS dead letters, then a checkpoint: the rows land in the file's row groups."""
    con.execute(
        "INSERT INTO dead_letters SELECT 'requests', 0, range, 0, 'codec_error', 'x', 1 "
        f"FROM range({ROWS})"
    )
    con.execute("CHECKPOINT")


def _row_groups(con: duckdb.DuckDBPyConnection, table: str) -> int:
    [(count,)] = con.execute(
        f"SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('{table}')"
    ).fetchall()
    return int(count)


def test_a_store_writes_row_groups_of_its_own_size(tmp_path: Path) -> None:
    path = tmp_path / "ledger.duckdb"
    with Store(path) as store:
        _fill(store._con)
        assert _row_groups(store._con, "dead_letters") == math.ceil(
            ROWS / store_file.ROW_GROUP_ROWS
        )
    with duckdb.connect(str(path), read_only=True) as plain:  # any DuckDB reads it back
        [(count,)] = plain.execute("SELECT count(*) FROM dead_letters").fetchall()
        assert count == ROWS


def test_a_cursor_reads_and_writes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "ledger.duckdb"
    with Store(path) as store:
        cursor = store.cursor()
        _fill(cursor)
        assert store.reader()._fetch("SELECT count(*) FROM dead_letters") == [(ROWS,)]
        cursor.close()
    assert not path.with_name(path.name + ".wal").exists()  # closed with a checkpoint


def test_a_refused_row_group_size_opens_the_file_the_plain_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(store_file, "ROW_GROUP_ROWS", 1000)  # DuckDB refuses: not a multiple
    path = tmp_path / "ledger.duckdb"
    with caplog.at_level(logging.WARNING, "oncelog.projector"), Store(path) as store:
        _fill(store._con)
        assert _row_groups(store._con, "dead_letters") == 1  # DuckDB's own 122,880 rows
    assert "default row groups" in caplog.text
    with Store(path) as again:
        assert again.reader()._fetch("SELECT count(*) FROM dead_letters") == [(ROWS,)]


def test_a_file_held_by_another_writer_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "ledger.duckdb"
    with Store(path), pytest.raises(StoreError, match="opening failed"):
        Store(path)
