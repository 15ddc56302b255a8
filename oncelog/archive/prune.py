"""History bounded in DuckDB: prune ``history`` and ``requests`` rows out of the window, into
Parquet beside the archive, and read them back with the tables (docs/guides/retention.md).

A row may leave the DuckDB file only where the requests archive covers it (its offset below
the partition's manifest end): the log's records it came from are then in the archive too.
The rows themselves are written to Parquet, exactly as the tables hold them, and listed in
the file's ``archived_rows`` table in the transaction that deletes them: a reader sees each
row either in its table or in a listed file, never in both, never in neither. Copying the
folded rows (rather than refolding the archived requests at query time) makes the answers
identical by construction: a refold needs each operation's state from the partition's
start, a rebuild per query.

The current version of an operation always stays: the projector reads its state blob.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from oncelog.errors import ArchiveCorruptError, ArchiveError, StoreError

from .archiver import load_manifest
from .location import ArchiveLocation


@dataclass(frozen=True)
class Window:
    """What the DuckDB history keeps: rows younger than ``max_age_ms`` (log time) and each
    operation's last ``max_versions`` versions. None on both: everything (nothing pruned)."""

    max_age_ms: int | None = None
    max_versions: int | None = None

    @property
    def unbounded(self) -> bool:
        """True when the window keeps every row."""
        return self.max_age_ms is None and self.max_versions is None


# Out of the window: older than the age, or beyond the last versions of the operation; never
# the current version, never at or past the archive's end. $cut_ms / $keep are NULL when
# that limit is not set (a comparison with NULL is never true).
_HISTORY_OUT: Final = """
  h."partition" = $p AND h.valid_from_offset < $end
  AND NOT EXISTS (SELECT 1 FROM executions e
                  WHERE e.operation_id = h.operation_id AND e.version = h.version)
  AND (h.log_time_ms < $cut_ms
       OR h.version <= (SELECT max(e.version) FROM executions e
                        WHERE e.operation_id = h.operation_id) - $keep)
"""
# A request goes with the versions: older than the age, or before the oldest version of its
# operation that the history keeps.
_REQUESTS_OUT: Final = """
  r."partition" = $p AND r."offset" < $end
  AND (r.log_time_ms < $cut_ms
       OR ($keep IS NOT NULL AND r."offset" < (
             SELECT min(h.valid_from_offset) FROM history h
             WHERE h.operation_id = r.operation_id)))
"""
_OUT: Final = {"history": ("h", _HISTORY_OUT), "requests": ("r", _REQUESTS_OUT)}
_OFFSET: Final = {"history": "valid_from_offset", "requests": '"offset"'}


@dataclass(frozen=True)
class Pruned:
    """What a prune moved out of one table of one partition."""

    table: str
    partition: int
    rows: int
    path: str | None


def prune_store(
    con: duckdb.DuckDBPyConnection,
    location: ArchiveLocation,
    topic: str,
    window: Window,
    now_ms: int,
) -> list[Pruned]:
    """Move the rows out of ``window`` (at ``now_ms``) that the archive of ``topic`` covers
    from the DuckDB file of ``con`` to Parquet files under ``location``.

    ``history`` goes first: the requests' rule reads which versions it keeps.

    Raises:
        ArchiveError: the archive is not a local directory (DuckDB reads the files back
            from there), or a file could not be written.
        StoreError: the DuckDB file could not be read or written.
    """
    if window.unbounded:
        return []
    if not location.local:
        raise ArchiveError(
            f"pruning needs a local archive directory, not {location.url}: the queries read "
            "the pruned rows' files with DuckDB (docs/guides/retention.md)"
        )
    done: list[Pruned] = []
    for p in _partitions(con):
        end = load_manifest(location, topic, p).end_offset
        if end is None:
            continue
        params = {
            "p": p,
            "end": end,
            "cut_ms": None if window.max_age_ms is None else now_ms - window.max_age_ms,
            "keep": window.max_versions,
        }
        for table in ("history", "requests"):
            done.append(_prune_table(con, location, topic, table, params))
    return done


def _partitions(con: duckdb.DuckDBPyConnection) -> list[int]:
    try:
        rows = con.execute('SELECT "partition" FROM positions ORDER BY 1').fetchall()
    except duckdb.Error as exc:
        raise StoreError(f"reading the positions failed: {exc}") from exc
    return [p for (p,) in rows]


def _prune_table(
    con: duckdb.DuckDBPyConnection,
    location: ArchiveLocation,
    topic: str,
    table: str,
    params: dict[str, int | None],
) -> Pruned:
    """One transaction: read the rows out of the window, write them, list the file, delete."""
    alias, where = _OUT[table]
    p = int(params["p"] or 0)
    offset = f"{alias}.{_OFFSET[table]}"
    try:
        con.execute("BEGIN")
        rows = con.sql(
            f"SELECT * FROM {table} {alias} WHERE {where} ORDER BY {offset}", params=params
        ).to_arrow_table()
        if rows.num_rows == 0:
            con.execute("ROLLBACK")
            return Pruned(table, p, 0, None)
        path = _write(location, topic, table, p, rows)
        first, last = rows[_OFFSET[table].strip('"')][0], rows[_OFFSET[table].strip('"')][-1]
        con.execute(
            "INSERT INTO archived_rows VALUES (?, ?, ?, ?, ?, ?, ?)",
            [table, p, first.as_py(), last.as_py(), rows.num_rows, path, _digest(path)],
        )
        con.execute(f"DELETE FROM {table} {alias} WHERE {where}", params)
        con.execute("COMMIT")
    except BaseException as exc:
        _rollback(con)
        if isinstance(exc, duckdb.Error):
            raise StoreError(f"pruning {table} of partition {p} failed: {exc}") from exc
        raise
    return Pruned(table, p, rows.num_rows, path)


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    with contextlib.suppress(duckdb.Error):  # no transaction was open
        con.execute("ROLLBACK")


def _write(
    location: ArchiveLocation, topic: str, table: str, partition: int, rows: pa.Table
) -> str:
    """The rows as a Parquet file named by its content (a re-run writes the same name)."""
    buffer = io.BytesIO()
    pq.write_table(rows, buffer)
    data = buffer.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    relative = f"{topic}.pruned/{table}/{partition:05d}/{digest}.parquet"
    location.put(relative, data)
    return f"{location.root}/{relative}"


def _digest(path: str) -> str:
    return path.rsplit("/", 1)[-1].removesuffix(".parquet")


def with_archived(con: duckdb.DuckDBPyConnection, sql: str) -> str:
    """``sql`` with ``{history}`` and ``{requests}`` replaced by the table, or by the table
    and its pruned rows' files when there are some."""
    files: dict[str, list[str]] = {"history": [], "requests": []}
    try:
        for table, path in con.execute("SELECT table_name, path FROM archived_rows").fetchall():
            files[table].append(path)
    except duckdb.CatalogException:
        pass  # a file of a version before pruning: nothing pruned
    except duckdb.Error as exc:
        raise StoreError(f"reading the pruned files failed: {exc}") from exc
    for table, paths in files.items():
        source = table
        if paths:
            listed = ", ".join("'" + p.replace("'", "''") + "'" for p in paths)
            source = (
                f"(SELECT * FROM {table} UNION ALL BY NAME "
                f"SELECT * FROM read_parquet([{listed}], union_by_name = true))"
            )
        sql = sql.replace("{" + table + "}", source)
    return sql


def check_pruned(con: duckdb.DuckDBPyConnection) -> int:
    """Check every file of pruned rows the DuckDB file lists: present, and its bytes the
    SHA-256 recorded when it was written; the number of files checked.

    Raises:
        ArchiveCorruptError: a listed file is missing or its bytes differ (the message
            names it): the history it held cannot be read back as it was.
    """
    try:
        listed = con.execute("SELECT path, sha256 FROM archived_rows ORDER BY path").fetchall()
    except duckdb.CatalogException:
        return 0  # a file of a version before pruning: nothing pruned
    except duckdb.Error as exc:
        raise StoreError(f"reading the pruned files failed: {exc}") from exc
    for path, expected in listed:
        try:
            data = Path(path).read_bytes()
        except FileNotFoundError:
            raise ArchiveCorruptError(
                f"the pruned rows file {path} is missing: restore it from a backup of the "
                "archive, or rebuild the file (`oncelog rebuild --from requests`)"
            ) from None
        except OSError as exc:
            raise ArchiveError(f"reading the pruned rows file {path} failed: {exc}") from exc
        if hashlib.sha256(data).hexdigest() != expected:
            raise ArchiveCorruptError(
                f"the pruned rows file {path} differs from what was written (SHA-256 "
                f"{expected} expected): restore it from a backup of the archive, or rebuild "
                "the file (`oncelog rebuild --from requests`)"
            )
    return len(listed)
