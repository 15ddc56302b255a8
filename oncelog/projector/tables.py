"""Table layouts of the DuckDB projection: the DDL and the Arrow schemas come from one list.

Each layout is a tuple of ``(name, SQL type and constraints, Arrow type)`` in
column order; :func:`arrow_table` builds a batch in that order, so the
``INSERT … SELECT *`` statements of the store cannot drift from the DDL.
See :mod:`oncelog.projector.store` for what each table means.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import pyarrow as pa

Column = tuple[str, str, Any]

STR: Final = pa.string()
INT: Final = pa.int64()
BIN: Final = pa.binary()
BOOL: Final = pa.bool_()

EXECUTIONS: Final[tuple[Column, ...]] = (
    ("operation_id", "VARCHAR NOT NULL PRIMARY KEY", STR),
    ("partition", "INTEGER NOT NULL", pa.int32()),
    ("channel_id", "VARCHAR NOT NULL", STR),
    ("key_name", "VARCHAR NOT NULL", STR),
    ("status", "VARCHAR NOT NULL", STR),
    ("version", "BIGINT NOT NULL", INT),
    ("epoch", "BIGINT NOT NULL", INT),
    ("worker_id", "VARCHAR NOT NULL", STR),
    ("effect", "VARCHAR NOT NULL", STR),
    ("result", "BLOB", BIN),
    ("result_hash", "VARCHAR", STR),
    ("expires_at_ms", "BIGINT", INT),
    ("source_offset", "BIGINT NOT NULL", INT),
    ("log_time_ms", "BIGINT NOT NULL", INT),
)
"""The current version of each operation, narrow: what a status query answers and what the
sweeps and the index read. Its other columns and its state blob are the ``history`` row of
that version (updating wide rows with the state blob in place cost the commit about a third
of its CPU; docs/performance.md)."""

HISTORY: Final[tuple[Column, ...]] = (
    ("operation_id", "VARCHAR NOT NULL", STR),
    ("version", "BIGINT NOT NULL", INT),
    ("partition", "INTEGER NOT NULL", pa.int32()),
    ("channel_id", "VARCHAR NOT NULL", STR),
    ("key_name", "VARCHAR NOT NULL", STR),
    ("valid_from_offset", "BIGINT NOT NULL", INT),
    ("log_time_ms", "BIGINT NOT NULL", INT),
    ("outcome", "VARCHAR NOT NULL", STR),
    ("request_id", "VARCHAR NOT NULL", STR),
    ("status", "VARCHAR NOT NULL", STR),
    ("epoch", "BIGINT NOT NULL", INT),
    ("worker_id", "VARCHAR NOT NULL", STR),
    ("token_fp", "VARCHAR NOT NULL", STR),
    ("effect", "VARCHAR NOT NULL", STR),
    ("result", "BLOB", BIN),
    ("result_hash", "VARCHAR", STR),
    ("expires_at_ms", "BIGINT", INT),
    ("state", "BLOB NOT NULL", BIN),
    # Read by the query side, which never decodes the state blob (after it: files of the
    # version before get them appended by the migration, with the same layout).
    ("lease_deadline_ms", "BIGINT", INT),
    ("tool_name", "VARCHAR", STR),
)

REQUESTS: Final[tuple[Column, ...]] = (
    ("partition", "INTEGER NOT NULL", pa.int32()),
    ("offset", "BIGINT NOT NULL", INT),
    ("request_id", "VARCHAR NOT NULL", STR),
    ("operation_id", "VARCHAR NOT NULL", STR),
    ("channel_id", "VARCHAR NOT NULL", STR),
    ("key_name", "VARCHAR NOT NULL", STR),
    ("kind", "VARCHAR NOT NULL", STR),
    ("outcome", "VARCHAR NOT NULL", STR),
    ("changed", "BOOLEAN NOT NULL", BOOL),
    ("version", "BIGINT NOT NULL", INT),
    ("epoch", "BIGINT", INT),
    ("worker_id", "VARCHAR", STR),
    ("token_fp", "VARCHAR", STR),
    ("effect", "VARCHAR", STR),
    ("log_time_ms", "BIGINT NOT NULL", INT),
    ("duplicate_effect_suspected", "BOOLEAN NOT NULL", BOOL),
    ("retried", "BOOLEAN NOT NULL", BOOL),
)

DEAD_LETTERS: Final[tuple[Column, ...]] = (
    ("topic", "VARCHAR NOT NULL", STR),
    ("partition", "INTEGER NOT NULL", pa.int32()),
    ("offset", "BIGINT NOT NULL", INT),
    ("log_time_ms", "BIGINT NOT NULL", INT),
    ("code", "VARCHAR NOT NULL", STR),
    ("message", "VARCHAR NOT NULL", STR),
    ("raw_length", "BIGINT NOT NULL", INT),
)

POSITIONS: Final[tuple[Column, ...]] = (
    ("partition", "INTEGER NOT NULL PRIMARY KEY", pa.int32()),
    ("next_offset", "BIGINT NOT NULL", INT),
    ("clock_ms", "BIGINT", INT),
)


def _ddl(name: str, columns: tuple[Column, ...], extra: str = "") -> str:
    body = ",\n  ".join(f'"{col}" {sql}' for col, sql, _ in columns)
    return f"CREATE TABLE IF NOT EXISTS {name} (\n  {body}{extra}\n)"


EXECUTIONS_DDL: Final = _ddl("executions", EXECUTIONS)

SCHEMA_DDL: Final = (
    EXECUTIONS_DDL,
    # No key: a commit inserts only rows at or after the stored position of their
    # partition (written in the same transaction), which is what makes it idempotent.
    _ddl("history", HISTORY),
    "CREATE INDEX IF NOT EXISTS history_operation ON history (operation_id)",
    _ddl("requests", REQUESTS, ',\n  PRIMARY KEY (partition, "offset")'),
    "CREATE INDEX IF NOT EXISTS requests_channel ON requests (channel_id)",
    _ddl("dead_letters", DEAD_LETTERS, ',\n  PRIMARY KEY (topic, partition, "offset")'),
    _ddl("positions", POSITIONS),
)


def arrow_table(columns: tuple[Column, ...], rows: Sequence[tuple[Any, ...]]) -> Any:
    """A pyarrow table of ``rows`` (tuples in column order), typed by the layout.

    The tuples go to Arrow as one struct array, converted in C++: transposing them
    into Python lists per column first cost about four times as much CPU.
    """
    struct = _STRUCTS.get(columns)
    if struct is None:
        struct = _STRUCTS[columns] = pa.struct([(name, t) for name, _, t in columns])
    return pa.Table.from_struct_array(pa.array(rows, type=struct))


_STRUCTS: dict[tuple[Column, ...], Any] = {}


def column_list(columns: tuple[Column, ...]) -> str:
    """The quoted column names of a layout, comma-separated."""
    return ", ".join(f'"{name}"' for name, _, _ in columns)


def upsert_sets(columns: tuple[Column, ...], key: str) -> str:
    """``col = excluded.col`` for every non-key column, for ``ON CONFLICT DO UPDATE``."""
    return ", ".join(f'"{n}" = excluded."{n}"' for n, _, _ in columns if n != key)
