"""Table layouts of the DuckDB projection: the DDL and the Arrow schemas come from one list.

Each layout is a tuple of :class:`Column` in column order; :func:`arrow_table`
builds a batch in that order, so the ``INSERT … SELECT *`` statements of the
store cannot drift from the DDL. A column that holds a model field is declared by
that field (:func:`mirror`): its SQL and Arrow types come from the ``.avsc``
type, and the row builders of :mod:`.rows` read it from the model.
See :mod:`oncelog.projector.store` for what each table means.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Final, NamedTuple

import pyarrow as pa

from oncelog.schemas import layout

STR: Final = pa.string()
INT: Final = pa.int64()
BIN: Final = pa.binary()
BOOL: Final = pa.bool_()


class Column(NamedTuple):
    """One column: its name, SQL type and constraints, Arrow type, and where its value comes from.

    ``source`` is the expression the row builders of :mod:`.rows` write for it
    (``state.status``, ``decision.epoch``, a name the builder computes, or
    ``body_field(request.body, name)`` for a field that only some kinds of body have).
    """

    name: str
    sql: str
    arrow: Any
    source: str = ""


# Avro type -> (SQL type, Arrow type), for the columns that mirror a model field.
_TYPES: Final = {
    "string": ("VARCHAR", STR),
    "enum": ("VARCHAR", STR),
    "long": ("BIGINT", INT),
    "int": ("INTEGER", pa.int32()),
    "boolean": ("BOOLEAN", BOOL),
    "bytes": ("BLOB", BIN),
    "double": ("DOUBLE", pa.float64()),
    "float": ("FLOAT", pa.float32()),
}
# The record each source root names, in the row builders' parameters.
_ROOTS: Final = {
    "request": layout.REQUEST,
    "decision": layout.DECISION,
    "snap": layout.SNAPSHOT,
    "state": layout.STATE,
    "ckpt": layout.CHECKPOINT,
}
_NAMED: Final = {
    name: t for schema in layout.CURRENT.values() for name, t in layout.named_types(schema).items()
}


def mirror(source: str, name: str = "", constraint: str = "") -> Column:
    """The column of the model field ``source`` (``root.field``), typed from its ``.avsc`` type.

    ``["null", X]`` is a nullable column of X's type; any other type is ``NOT NULL``.
    """
    root, field = source.split(".")
    record = _NAMED[_ROOTS[root]]
    t = next(f["type"] for f in record["fields"] if f["name"] == field)
    nullable = isinstance(t, list) and len(t) == 2 and t[0] == "null"
    t = t[1] if nullable else t
    t = _NAMED.get(t, t) if isinstance(t, str) else t
    sql, arrow = _TYPES[t["type"] if isinstance(t, dict) else t]
    sql += "" if nullable else " NOT NULL"
    return Column(name or field, f"{sql} {constraint}".rstrip(), arrow, source)


EXECUTIONS: Final[tuple[Column, ...]] = (
    mirror("state.operation_id", constraint="PRIMARY KEY"),
    mirror("snap.source_partition", "partition"),
    mirror("state.channel_id"),
    mirror("state.key_name"),
    mirror("state.status"),
    mirror("state.version"),
    mirror("state.epoch"),
    mirror("state.worker_id"),
    mirror("state.effect"),
    mirror("state.result"),
    mirror("state.result_hash"),
    mirror("state.expires_at_ms"),
    mirror("snap.source_offset"),
    mirror("snap.log_time_ms"),
    # Last: a file of the version before gets it from the migration, filled from history.
    mirror("state.lease_deadline_ms"),
)
"""The current version of each operation, narrow: what a status query answers and what the
sweeps and the index read; ``lease_deadline_ms`` finds a lapsed ``CLAIMED`` step by SQL.
Its other columns and its state blob are the ``history`` row of that version (updating
wide rows with the state blob in place cost the commit much of its CPU;
docs/performance.md)."""

HISTORY: Final[tuple[Column, ...]] = (
    mirror("state.operation_id"),
    mirror("state.version"),
    mirror("snap.source_partition", "partition"),
    mirror("state.channel_id"),
    mirror("state.key_name"),
    mirror("snap.source_offset", "valid_from_offset"),
    mirror("snap.log_time_ms"),
    mirror("snap.outcome"),
    mirror("snap.source_request_id", "request_id"),
    mirror("state.status"),
    mirror("state.epoch"),
    mirror("state.worker_id"),
    mirror("state.token_fp"),
    mirror("state.effect"),
    mirror("state.result"),
    mirror("state.result_hash"),
    mirror("state.expires_at_ms"),
    Column("state", "BLOB NOT NULL", BIN, "blob"),
    # Read by the query side, which never decodes the state blob (after it: a file of the
    # version before gets them from the migration, filled from its blobs).
    mirror("state.lease_deadline_ms"),
    mirror("state.tool_name"),
    # Forks (issue 29), nullable so that the migration adds it: the audit matches a
    # re-run across branches by key name and request hash.
    Column("request_hash", "VARCHAR", STR, "state.request_hash"),
)

REQUESTS: Final[tuple[Column, ...]] = (
    Column("partition", "INTEGER NOT NULL", pa.int32(), "partition"),
    Column("offset", "BIGINT NOT NULL", INT, "offset"),
    mirror("request.request_id"),
    mirror("request.operation_id"),
    mirror("request.channel_id"),
    mirror("request.key_name"),
    mirror("decision.kind"),
    mirror("decision.outcome"),
    mirror("decision.changed"),
    mirror("decision.version"),
    # The sender's attempt: the grant whose token the request carries (a claim that got
    # no grant: its own worker, no epoch). Never the state's holder (issue 26).
    Column("epoch", "BIGINT", INT, "epoch"),
    Column("worker_id", "VARCHAR", STR, "worker"),
    Column("token_fp", "VARCHAR", STR, "token_fp"),  # the token stays on the log
    # The claim names its effect; other kinds report the state's.
    Column("effect", "VARCHAR", STR, "effect"),
    Column("log_time_ms", "BIGINT NOT NULL", INT, "log_time_ms"),
    mirror("decision.duplicate_effect_suspected"),
    mirror("decision.retried"),
    mirror("request.reconciled"),
    # Added for the audit (issue 26), after the older columns: the migration appends them.
    # The state the request met: its epoch and holder before the request was judged.
    Column("state_epoch", "BIGINT", INT, "state_epoch"),
    Column("state_worker_id", "VARCHAR", STR, "state_worker"),
    # On a reclaim: the attempt it superseded, and whether its outcome is now unknown.
    Column("outcome_unknown", "BOOLEAN", BOOL, "bool(previous and previous.outcome_unknown)"),
    Column("previous_token_fp", "VARCHAR", STR, "previous and previous.token_fp"),
    Column("previous_heartbeat_ms", "BIGINT", INT, "previous and previous.last_heartbeat_ms"),
    # An inherit (issue 29): the channel it took the completion from, and whether a branch
    # adopted it at a claim (True) or a fork inherited it (False). NULL on other kinds.
    Column("from_channel", "VARCHAR", STR, "body_field(request.body, 'from_channel')"),
    Column("adopted", "BOOLEAN", BOOL, "body_field(request.body, 'adopted')"),
    # A failure's code (the first word of its text; NULL on other kinds): the audit reads
    # a fenced ``result_unrecordable`` (the tool ran, its result could not be recorded).
    Column("error_code", "VARCHAR", STR, "error_code"),
    # Approvals: a decision's approver (a name, never a token) and a deny's or a
    # cancel's reason, for the run page's lane. NULL on other kinds.
    Column("approver", "VARCHAR", STR, "body_field(request.body, 'approver')"),
    Column("reason", "VARCHAR", STR, "body_field(request.body, 'reason')"),
)
"""One row per folded request and its answer. A column added here for a new optional
field reaches an older file too: :func:`added_columns` (run by the migration)."""

DEAD_LETTERS: Final[tuple[Column, ...]] = (
    Column("topic", "VARCHAR NOT NULL", STR),
    Column("partition", "INTEGER NOT NULL", pa.int32()),
    Column("offset", "BIGINT NOT NULL", INT),
    Column("log_time_ms", "BIGINT NOT NULL", INT),
    Column("code", "VARCHAR NOT NULL", STR),
    Column("message", "VARCHAR NOT NULL", STR),
    Column("raw_length", "BIGINT NOT NULL", INT),
)

POSITIONS: Final[tuple[Column, ...]] = (
    Column("partition", "INTEGER NOT NULL PRIMARY KEY", pa.int32()),
    Column("next_offset", "BIGINT NOT NULL", INT),
    Column("clock_ms", "BIGINT", INT),
)


CHECKPOINTS: Final[tuple[Column, ...]] = (
    Column("record_key", "VARCHAR NOT NULL", STR, "key"),
    mirror("ckpt.part"),
    Column("partition", "INTEGER NOT NULL", pa.int32(), "partition"),
    Column("offset", "BIGINT NOT NULL", INT, "offset"),
    # Every other field of the record, in the .avsc's order.
    *(mirror(f"ckpt.{f['name']}") for f in _NAMED[_ROOTS["ckpt"]]["fields"] if f["name"] != "part"),
)
"""The LangGraph checkpoints folded from ``<prefix>.checkpoints``: the last record of each
(record_key, part) that no tombstone deleted (:mod:`oncelog.projector.checkpoints`). No key
constraint: a commit deletes the batch's keys, then inserts what they hold now."""

CHECKPOINT_POSITIONS: Final[tuple[Column, ...]] = (
    Column("partition", "INTEGER NOT NULL PRIMARY KEY", pa.int32()),
    Column("next_offset", "BIGINT NOT NULL", INT),
)
"""Per partition of the checkpoints topic: the next offset to fold."""


ARCHIVED_ROWS: Final[tuple[Column, ...]] = (
    Column("table_name", "VARCHAR NOT NULL", STR),
    Column("partition", "INTEGER NOT NULL", pa.int32()),
    Column("first_offset", "BIGINT NOT NULL", INT),
    Column("last_offset", "BIGINT NOT NULL", INT),
    Column("rows", "BIGINT NOT NULL", INT),
    Column("path", "VARCHAR NOT NULL", STR),
    Column("sha256", "VARCHAR NOT NULL", STR),
)
"""The Parquet files holding rows pruned from ``history`` and ``requests`` (one row a file,
written in the transaction that deleted them: :mod:`oncelog.archive.prune`). The queries
read those files beside the table; the history fill counts their requests as held."""


def _ddl(name: str, columns: tuple[Column, ...], extra: str = "") -> str:
    body = ",\n  ".join(f'"{c.name}" {c.sql}' for c in columns)
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
    _ddl("checkpoints", CHECKPOINTS),
    "CREATE INDEX IF NOT EXISTS checkpoints_thread ON checkpoints (thread_id)",
    "CREATE INDEX IF NOT EXISTS checkpoints_key ON checkpoints (record_key)",
    _ddl("checkpoint_positions", CHECKPOINT_POSITIONS),
    _ddl("archived_rows", ARCHIVED_ROWS),
)


def arrow_table(columns: tuple[Column, ...], rows: Sequence[tuple[Any, ...]]) -> Any:
    """A pyarrow table of ``rows`` (tuples in column order), typed by the layout.

    The tuples go to Arrow as one struct array, converted in C++: transposing them
    into Python lists per column first cost several times as much CPU.
    """
    struct = _STRUCTS.get(columns)
    if struct is None:
        struct = _STRUCTS[columns] = pa.struct([(c.name, c.arrow) for c in columns])
    return pa.Table.from_struct_array(pa.array(rows, type=struct))


_STRUCTS: dict[tuple[Column, ...], Any] = {}


def column_list(columns: tuple[Column, ...]) -> str:
    """The quoted column names of a layout, comma-separated."""
    return ", ".join(f'"{c.name}"' for c in columns)


def upsert_sets(columns: tuple[Column, ...], key: str) -> str:
    """``col = excluded.col`` for every non-key column, for ``ON CONFLICT DO UPDATE``."""
    return ", ".join(f'"{c.name}" = excluded."{c.name}"' for c in columns if c.name != key)


TABLES: Final = {
    "executions": EXECUTIONS,
    "history": HISTORY,
    "requests": REQUESTS,
    "checkpoints": CHECKPOINTS,
}
"""The tables whose layout follows the models (and may gain nullable columns)."""


def added_columns(table: str, existing: Collection[str]) -> list[str]:
    """``ALTER TABLE`` statements adding the nullable columns of ``table`` a file lacks.

    A column added for a new optional field is nullable; its rows written before
    it read as NULL. A missing ``NOT NULL`` column is a migration of its own.
    """
    missing = [c for c in TABLES[table] if c.name not in existing]
    for c in missing:
        if "NOT NULL" in c.sql:
            raise ValueError(f"{table}.{c.name} is NOT NULL: it needs a migration of its own")
    return [f'ALTER TABLE {table} ADD COLUMN "{c.name}" {c.sql}' for c in missing]
