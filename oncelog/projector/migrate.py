"""Bring a DuckDB projection written by an older version up to the current layout.

Before token fingerprints (docs/spec.md §8), the ``executions``, ``history`` and
``requests`` tables had a ``claim_token`` column holding the token itself. The
migration renames it to ``token_fp`` and replaces each token by its
fingerprint (the same one :func:`oncelog.identity.tokens.token_fingerprint`
computes), in one transaction, so that no token stays readable in the file.
The state blobs are converted on read (:mod:`oncelog.projector.state_blob`).

A nullable column a layout of :mod:`.tables` gained (for a new optional
field of a model) is added to an older file's table; its old rows read NULL.

Before the narrow ``executions`` table (issue 10), each current row held every
column of its version and the state blob; the migration keeps the narrow
columns (the rest is the version's ``history`` row). Such a file keeps its
history primary key: commits are correct with it, only slower.

Before the query side read columns only, ``history`` had no ``lease_deadline_ms``
and ``tool_name``: the migration adds them and fills them from each row's state
blob, so that no reader but the writer's ever decodes a blob.

Before the audit of doubles (issue 26), a ``requests`` row named the state's
holder and epoch, not its sender's: the migration moves those to the new
``state_epoch``/``state_worker_id`` (the state the request met: the ``history``
version before it) and names the sender's own attempt in ``epoch``/``worker_id``
(the grant whose token fingerprint the request carries). The unknown outcomes of
such a file's reclaims stay NULL: ``oncelog rebuild`` refolds them.
Before issue 27, ``executions`` had no ``lease_deadline_ms`` (a step whose worker
died could not be found by SQL): the migration adds it and fills it from the
``history`` row of each current version.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import duckdb
import pyarrow as pa

from oncelog.identity.tokens import TOKEN_FP_HEX
from oncelog.projector.state_blob import decode_state
from oncelog.projector.tables import EXECUTIONS, EXECUTIONS_DDL, TABLES, added_columns, column_list

TOKEN_TABLES: Final = ("executions", "history", "requests")
# DuckDB refuses to alter a table that an index depends on: these are dropped
# first, and the schema DDL (run after the migration) creates them again.
INDEXES: Final = {"history": "history_operation", "requests": "requests_channel"}
BACKFILL_ROWS: Final = 50_000  # history rows decoded per step: bounds the blobs held at once


@contextmanager
def _transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """One transaction: committed when the block ends, rolled back when it raises."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


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
    changed = _fingerprint_tokens(con)
    if _has_column(con, "executions", "state"):
        _narrow_executions(con)
        changed = sorted({*changed, "executions"})
    if _has_column(con, "history", "state") and not _has_column(con, "history", "tool_name"):
        _lease_and_tool_columns(con)
        changed = sorted({*changed, "history"})
    if _has_column(con, "requests", "kind") and not _has_column(con, "requests", "state_epoch"):
        _attribute_senders(con)
        changed = sorted({*changed, "requests"})
    if _has_column(con, "executions", "status") and not _has_column(
        con, "executions", "lease_deadline_ms"
    ):
        _current_lease_column(con)
        changed = sorted({*changed, "executions"})
    return sorted({*changed, *_add_columns(con)})


def _current_lease_column(con: duckdb.DuckDBPyConnection) -> None:
    """Add ``lease_deadline_ms`` to ``executions``, from each current version's history row."""
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute("ALTER TABLE executions ADD COLUMN lease_deadline_ms BIGINT")
        con.execute(
            "UPDATE executions SET lease_deadline_ms = h.lease_deadline_ms FROM history h "
            "WHERE h.operation_id = executions.operation_id AND h.version = executions.version"
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _add_columns(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Add the nullable columns a layout gained (a new optional field) to an older file."""
    changed = []
    for table in TABLES:
        rows = con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]
        ).fetchall()
        if not rows:  # a new file: the schema DDL creates the table
            continue
        statements = added_columns(table, {row[0] for row in rows})
        for statement in statements:
            con.execute(statement)
        if statements:
            changed.append(table)
    return changed


# Per request row: the history version before it (the state it met) and the grant of
# its token (its sender's attempt). A claim keeps the worker it named.
_ATTRIBUTION: Final = """
CREATE TEMP TABLE _attribution AS
SELECT r.rowid AS id, h.epoch AS state_epoch, h.worker_id AS state_worker_id,
       g.epoch AS epoch, CASE WHEN r.kind = 'claim' THEN r.worker_id ELSE g.worker_id END
       AS worker_id
FROM requests r
ASOF LEFT JOIN (SELECT operation_id, valid_from_offset, epoch, worker_id FROM history) h
  ON h.operation_id = r.operation_id AND r."offset" > h.valid_from_offset
LEFT JOIN (
  SELECT operation_id, token_fp, arg_min(epoch, version) AS epoch,
         arg_min(worker_id, version) AS worker_id
  FROM history WHERE outcome IN ('claimed', 'reclaimed') GROUP BY operation_id, token_fp
) g ON g.operation_id = r.operation_id AND g.token_fp = r.token_fp
"""


def _attribute_senders(con: duckdb.DuckDBPyConnection) -> None:
    """Name each request's sender attempt and the state it met (see the module doc)."""
    with _transaction(con):
        con.execute(f"DROP INDEX IF EXISTS {INDEXES['requests']}")
        con.execute("ALTER TABLE requests ADD COLUMN state_epoch BIGINT")
        con.execute("ALTER TABLE requests ADD COLUMN state_worker_id VARCHAR")
        con.execute(_ATTRIBUTION)
        con.execute(
            "UPDATE requests SET state_epoch = a.state_epoch, "
            "state_worker_id = a.state_worker_id, epoch = a.epoch, worker_id = a.worker_id "
            "FROM _attribution a WHERE requests.rowid = a.id"
        )
        con.execute("DROP TABLE _attribution")


def _lease_and_tool_columns(con: duckdb.DuckDBPyConnection) -> None:
    """Add ``lease_deadline_ms`` and ``tool_name`` to ``history``, from the blobs."""
    with _transaction(con):
        con.execute(f"DROP INDEX IF EXISTS {INDEXES['history']}")
        con.execute("ALTER TABLE history ADD COLUMN lease_deadline_ms BIGINT")
        con.execute("ALTER TABLE history ADD COLUMN tool_name VARCHAR")
        [(last,)] = con.execute("SELECT coalesce(max(rowid), -1) FROM history").fetchall()
        for start in range(0, last + 1, BACKFILL_ROWS):
            rows = con.execute(
                "SELECT rowid, state FROM history WHERE rowid >= ? AND rowid < ?",
                [start, start + BACKFILL_ROWS],
            ).fetchall()
            states = [decode_state(blob) for _, blob in rows]
            filled = pa.table(
                {
                    "id": [rowid for rowid, _ in rows],
                    "lease": [s.lease_deadline_ms for s in states],
                    "tool": [s.tool_name for s in states],
                }
            )
            con.register("_filled", filled)
            con.execute(
                "UPDATE history SET lease_deadline_ms = f.lease, tool_name = f.tool "
                "FROM _filled f WHERE history.rowid = f.id"
            )
            con.unregister("_filled")


def _narrow_executions(con: duckdb.DuckDBPyConnection) -> None:
    """Replace the wide ``executions`` table by the narrow one, in one transaction."""
    columns = column_list(EXECUTIONS)
    with _transaction(con):
        con.execute("ALTER TABLE executions RENAME TO executions_wide")
        con.execute(EXECUTIONS_DDL)
        con.execute(f"INSERT INTO executions ({columns}) SELECT {columns} FROM executions_wide")
        con.execute("DROP TABLE executions_wide")


def _fingerprint_tokens(con: duckdb.DuckDBPyConnection) -> list[str]:
    stale = [table for table in TOKEN_TABLES if _has_column(con, table, "claim_token")]
    if not stale:
        return []
    with _transaction(con):
        for table in stale:
            if table in INDEXES:
                con.execute(f"DROP INDEX IF EXISTS {INDEXES[table]}")
            con.execute(f"ALTER TABLE {table} RENAME COLUMN claim_token TO token_fp")
            con.execute(
                f"UPDATE {table} SET token_fp = substr(sha256(token_fp), 1, {TOKEN_FP_HEX})"
                " WHERE token_fp IS NOT NULL"
            )
    return stale
