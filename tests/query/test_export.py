"""Auditing while serve runs: ``oncelog export`` copies the tables as Parquet, for any SQL."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from oncelog.cli import app
from oncelog.errors import ConfigError, InvalidArgumentError, UnauthorizedError
from oncelog.query.export import TABLES, export_tables
from oncelog.query.server import HttpServer, start_http
from tests.query.query_factories import CHANNEL, CHARGE, LEASE_MS, Ledger

TOKEN = "export-token-for-tests"


@pytest.fixture
def api(ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> Iterator[HttpServer]:
    monkeypatch.setenv("ONCELOG_HTTP_TOKEN", TOKEN)
    server = start_http(ledger.store, "127.0.0.1", 0, token=SecretStr(TOKEN))
    yield server
    server.stop()


def _count(con: duckdb.DuckDBPyConnection, source: str) -> int:
    row = con.execute(f"SELECT count(*) FROM {source}").fetchone()
    assert row is not None
    return int(row[0])


def test_export_copies_every_table_of_a_running_serve(
    api: HttpServer, ledger: Ledger, tmp_path: Path
) -> None:
    out = tmp_path / "audit"
    result = CliRunner().invoke(app, ["export", str(out), "--url", f"http://127.0.0.1:{api.port}"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{t}.parquet" for t in TABLES)
    live = ledger.store.cursor()
    sql = duckdb.connect()
    for table in TABLES:
        assert _count(sql, f"'{out / table}.parquet'") == _count(live, table), table
    columns = {
        r[0] for r in sql.execute(f"DESCRIBE SELECT * FROM '{out}/history.parquet'").fetchall()
    }
    assert "state" not in columns  # the writer's own blobs stay home
    # The step whose worker died: CLAIMED (at 3003 + LEASE_MS), its lease over a lease later.
    lapsed = sql.execute(
        f"SELECT key_name, lease_deadline_ms FROM '{out}/executions.parquet' "
        "WHERE channel_id = ? AND status = 'CLAIMED' AND lease_deadline_ms < ?",
        [CHANNEL, 3_004 + 2 * LEASE_MS],
    ).fetchall()
    assert lapsed == [(CHARGE, 3_003 + 2 * LEASE_MS)]


def test_a_redacting_serve_exports_no_result(ledger: Ledger, tmp_path: Path) -> None:
    folder = tmp_path / "export"
    folder.mkdir()
    cursor = ledger.store.cursor()
    try:
        export_tables(cursor, folder, redact=True)
    finally:
        cursor.close()
    sql = duckdb.connect()
    for table in ("executions", "history"):
        nonnull = sql.execute(f"SELECT count(result) FROM '{folder / table}.parquet'").fetchone()
        assert nonnull == (0,), table


def test_export_refuses_a_folder_with_files_and_a_caller_without_the_token(
    api: HttpServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"http://127.0.0.1:{api.port}"
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    refused = CliRunner().invoke(app, ["export", str(busy), "--url", url])
    assert isinstance(refused.exception, InvalidArgumentError)
    assert (busy / "notes.txt").read_text() == "mine"
    monkeypatch.setenv("ONCELOG_HTTP_TOKEN", "wrong")
    denied = CliRunner().invoke(app, ["export", str(tmp_path / "new"), "--url", url])
    assert isinstance(denied.exception, UnauthorizedError)


def test_the_zip_holds_only_the_table_files(api: HttpServer, tmp_path: Path) -> None:
    import httpx  # noqa: PLC0415

    response = httpx.get(
        f"http://127.0.0.1:{api.port}/v1/export",
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=60,
    )
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/zip"
    archive = tmp_path / "x.zip"
    archive.write_bytes(response.content)
    with zipfile.ZipFile(archive) as zipped:
        assert sorted(zipped.namelist()) == sorted(f"{t}.parquet" for t in TABLES)


def test_a_query_on_a_held_file_points_at_the_api_and_export(
    ledger: Ledger, tmp_path: Path
) -> None:
    # The fixture's store holds the file read-write, as `oncelog serve` does.
    held = CliRunner().invoke(app, ["status", CHANNEL, "2", "--db", str(ledger.path)])
    assert isinstance(held.exception, ConfigError)
    assert "oncelog export" in held.exception.message
    missing = CliRunner().invoke(app, ["status", CHANNEL, "2", "--db", str(tmp_path / "no.db")])
    assert isinstance(missing.exception, ConfigError)
    assert "oncelog serve" in missing.exception.message
