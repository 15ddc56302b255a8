"""Opening the projection's DuckDB file, and what its failures become.

A writable file gets row groups of :data:`ROW_GROUP_ROWS` rows, not DuckDB's 122,880.
Every checkpoint writes each table's last row group out again while it is only partly
filled, and ``history``'s rows carry a state blob each: with the default size a
checkpoint rewrote up to ~100 MB of them, and a commit's cost grew as that row group
filled (docs/performance.md, "Choices and what they bought"). DuckDB takes the size only as an
option of ``ATTACH``, so the file is attached in place of the in-memory default database
(``ATTACH OR REPLACE ... AS memory``): every cursor starts on the default catalog, and so
on the file, as with ``duckdb.connect(path)``. A file written with either size reads the
same; a DuckDB that refuses the statement opens the file the plain way.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Final

import duckdb

from oncelog.errors import DiskFullError, StoreError

#: Rows per row group in a file this package writes.
ROW_GROUP_ROWS: Final = 16_384
#: The catalog every new DuckDB connection starts on.
DEFAULT_CATALOG: Final = "memory"

#: How DuckDB words a write the volume had no room for (its IO errors carry no errno).
_NO_SPACE = ("no space left on device", "disk is full", "not enough space")
_LOG = logging.getLogger("oncelog.projector")

Config = dict[str, str | bool | int | float | list[str]]


def open_file(path: Path, *, read_only: bool, config: Config) -> duckdb.DuckDBPyConnection:
    """A connection to the projection at ``path`` (made when missing, unless ``read_only``).

    Raises:
        duckdb.Error: DuckDB's own failure (a lock another process holds, a corrupt file);
            the caller words it with :func:`store_failure`.
    """
    if read_only:
        return duckdb.connect(str(path), read_only=True, config=config)
    con = duckdb.connect(":memory:", config=config)
    literal = str(path).replace("'", "''")
    try:
        con.execute(
            f"ATTACH OR REPLACE '{literal}' AS {DEFAULT_CATALOG} (ROW_GROUP_SIZE {ROW_GROUP_ROWS})"
        )
    except duckdb.Error as refused:
        con.close()
        plain = duckdb.connect(str(path), config=config)  # a lock, a corrupt file: raised here
        _LOG.warning("%s: opened with DuckDB's default row groups (%s)", path, refused)
        return plain
    return con


def store_failure(what: str, path: Path, exc: duckdb.Error) -> StoreError:
    """``exc`` of ``what`` on ``path`` as a :class:`StoreError`; a :class:`DiskFullError`
    when the volume had no room, which says what to do."""
    if any(words in str(exc).lower() for words in _NO_SPACE):
        return DiskFullError(
            f"{what} failed on {path}: its volume is full ({exc}). Free space there (or "
            "move ONCELOG_DB_PATH) and start serve again: it resumes from its last commit, "
            "and nothing acknowledged is lost (it is on the log)"
        )
    return StoreError(f"{what} failed on {path}: {exc}")


def make_folder(path: Path) -> None:
    """The file's folder (the default file's, ONCELOG_DATA_DIR/ledgers, is made on first use)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreError(f"cannot make the folder of {path}: {exc}") from exc
