"""``GET /v1/export``: the projection's tables as Parquet, one consistent snapshot, for SQL.

While ``oncelog serve`` runs, its DuckDB file is locked: DuckDB lets one process
open a file, even read-only, while another writes it. So an auditor asks the
running ``serve`` for a copy: it writes every table of the projection as a
Parquet file, all from one transaction of its own connection (one snapshot:
the tables agree with each other and with ``positions``), zips them and sends
the zip. ``oncelog export DIR`` fetches and unpacks it; any SQL then runs over
the files, in the auditor's process (``SELECT ... FROM 'DIR/executions.parquet'``).

Why a copy and not a SQL endpoint: DuckDB SQL can read and write local files,
attach databases and load extensions, which a read token should not grant on the
server; a long analytical query would take the projector's CPU; and a copy keeps
the API's redaction. The copy holds what the API can answer: with
``--redact-results`` every ``result`` is null; the ``state`` blobs (the writer's
own Avro encoding) are left out. Claim tokens are never in the file, only their
fingerprints.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Final

import duckdb
from fastapi import FastAPI
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from oncelog.errors import StoreError
from oncelog.schemas import read_api

EXPORT_PATH: Final = read_api.EXPORT
TABLES: Final = ("executions", "history", "requests", "dead_letters", "positions")
"""The tables exported, one Parquet file each (``<table>.parquet``)."""
_LEFT_OUT: Final = frozenset({"state"})  # the writer's Avro blob: no SQL reads it


def export_tables(con: duckdb.DuckDBPyConnection, folder: Path, *, redact: bool) -> list[Path]:
    """Write each of :data:`TABLES` to ``folder/<table>.parquet`` from one snapshot.

    One transaction of ``con`` reads every table, so the files agree with each
    other even while the projector commits. ``redact``: ``result`` columns are null.
    """
    written = []
    con.execute("BEGIN TRANSACTION")
    try:
        for table in TABLES:
            target = folder / f"{table}.parquet"
            columns = _columns(con, table, redact=redact)
            quoted = str(target).replace("'", "''")
            con.execute(f"COPY (SELECT {columns} FROM {table}) TO '{quoted}' (FORMAT parquet)")
            written.append(target)
    except duckdb.Error as exc:
        raise StoreError(f"exporting the projection to {folder} failed: {exc}") from exc
    finally:
        con.execute("ROLLBACK")  # it only read
    return written


def _columns(con: duckdb.DuckDBPyConnection, table: str, *, redact: bool) -> str:
    names = [
        row[0]
        for row in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
            "ORDER BY ordinal_position",
            [table],
        ).fetchall()
    ]
    kept = []
    for name in names:
        if name in _LEFT_OUT:
            continue
        kept.append(f'NULL AS "{name}"' if redact and name == "result" else f'"{name}"')
    return ", ".join(kept)


def zip_export(con: duckdb.DuckDBPyConnection, folder: Path, *, redact: bool) -> Path:
    """The tables exported into ``folder`` and zipped there (stored: Parquet is compressed)."""
    archive = folder / "oncelog-export.zip"
    files = export_tables(con, folder, redact=redact)
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_STORED) as zipped:
        for path in files:
            zipped.write(path, path.name)
            path.unlink()
    return archive


def install_export(
    app: FastAPI, cursor_factory: Callable[[], duckdb.DuckDBPyConnection], *, redact: bool
) -> None:
    """Add ``GET /v1/export`` (behind the API's token, like every closed path; answered by
    this instance alone, with its own partitions, and left out of the OpenAPI schema)."""

    # Left out of the OpenAPI schema, as /metrics is: the schema is the table of
    # oncelog.query.api.ROUTES, JSON answers a group can route; this is a file of one member.
    @app.get(EXPORT_PATH, response_class=FileResponse, include_in_schema=False)
    async def export() -> FileResponse:
        """Every table of this instance's projection as Parquet files in one zip, from one
        snapshot; ``result`` is null under ``--redact-results``. ``oncelog export`` unpacks it."""
        folder = Path(tempfile.mkdtemp(prefix="oncelog-export-"))

        def write() -> Path:
            con = cursor_factory()
            try:
                return zip_export(con, folder, redact=redact)
            finally:
                con.close()

        try:
            archive = await run_in_threadpool(write)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        cleanup = BackgroundTask(shutil.rmtree, folder, ignore_errors=True)
        return FileResponse(
            archive, media_type="application/zip", filename=archive.name, background=cleanup
        )
