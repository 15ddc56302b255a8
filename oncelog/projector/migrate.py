"""Bring a DuckDB projection written by an older version up to the current layout.

Before token fingerprints (spec §8), the ``executions``, ``history`` and
``requests`` tables had a ``claim_token`` column holding the token itself. The
migration renames it to ``token_fp`` and replaces each token by its
fingerprint (the same one :func:`oncelog.identity.tokens.token_fingerprint`
computes), in one transaction, so that no token stays readable in the file.
The state blobs are converted on read (:mod:`oncelog.projector.state_blob`).
"""

from __future__ import annotations

from typing import Final

import duckdb

from oncelog.identity.tokens import TOKEN_FP_HEX

TOKEN_TABLES: Final = ("executions", "history", "requests")
# DuckDB refuses to alter a table that an index depends on: these are dropped
# first, and the schema DDL (run after the migration) creates them again.
INDEXES: Final = {"history": "history_operation", "requests": "requests_channel"}


def _has_column(con: duckdb.DuckDBPyConnection, table: str, column: str) -> bool:
    row = con.execute(
        "SELECT count(*) FROM information_schema.columns WHERE table_name = ? AND column_name = ?",
        [table, column],
    ).fetchone()
    return row is not None and row[0] > 0


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply what is missing; return the tables that were changed (empty when current).

    Run it before the schema DDL, which recreates the indexes dropped here.
    """
    stale = [table for table in TOKEN_TABLES if _has_column(con, table, "claim_token")]
    if not stale:
        return []
    con.execute("BEGIN TRANSACTION")
    try:
        for table in stale:
            if table in INDEXES:
                con.execute(f"DROP INDEX IF EXISTS {INDEXES[table]}")
            con.execute(f"ALTER TABLE {table} RENAME COLUMN claim_token TO token_fp")
            con.execute(
                f"UPDATE {table} SET token_fp = substr(sha256(token_fp), 1, {TOKEN_FP_HEX})"
                " WHERE token_fp IS NOT NULL"
            )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return stale
