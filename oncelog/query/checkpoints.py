"""Read LangGraph checkpoints out of the projection (what the saver's reads ask for).

A checkpoint is listed only once all its parts are folded, and it comes with the
channel values its ``channel_versions`` name and the pending writes stored on it, each
joined from its parts (:mod:`oncelog.schemas.checkpoint_parts`). Order: newest first
(checkpoint ids are time-ordered UUIDs), then thread and namespace, the order in which
a ``cursor`` pages on.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

import duckdb

from oncelog.errors import InvalidArgumentError
from oncelog.schemas.checkpoint_answers import (
    CheckpointBlob,
    CheckpointItem,
    CheckpointPart,
    CheckpointWrite,
)
from oncelog.schemas.checkpoint_parts import join_parts

Cursor = tuple[str, str, str]
"""(checkpoint_id, thread_id, checkpoint_ns) of the last checkpoint of a page."""


@dataclass(frozen=True)
class CheckpointQuery:
    """Which checkpoints a list asks for (None: any, for each field after the thread)."""

    thread_id: str | None
    """One thread's checkpoints (its id is a channel id); None: every thread's."""
    checkpoint_ns: str | None = None
    """One namespace's (LangGraph's subgraphs; "" is the root graph)."""
    checkpoint_id: str | None = None
    before: str | None = None
    """Only checkpoints with an id below this one."""
    filter: Mapping[str, Any] | None = None
    """Metadata keys and the values they must equal."""
    cursor: Cursor | None = None
    """Only checkpoints after this one in the listing's order."""


_ORDER: Final = "checkpoint_id DESC, thread_id, checkpoint_ns"


def _json(name: str, text: str) -> Any:
    """The JSON value of query parameter ``name``."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InvalidArgumentError(f"{name} is not JSON: {exc}") from exc


def parse_filter(text: str | None) -> dict[str, Any] | None:
    """The ``filter`` query parameter: a JSON object (``invalid_argument`` otherwise)."""
    if text is None:
        return None
    value = _json("filter", text)
    if not isinstance(value, dict):
        raise InvalidArgumentError("filter must be a JSON object of metadata keys and values")
    return value


def parse_cursor(text: str | None) -> Cursor | None:
    """The ``cursor`` query parameter: ``[checkpoint_id, thread_id, checkpoint_ns]``."""
    if text is None:
        return None
    value = _json("cursor", text)
    if not (isinstance(value, list) and len(value) == 3 and all(isinstance(v, str) for v in value)):
        raise InvalidArgumentError("cursor must be [checkpoint_id, thread_id, checkpoint_ns]")
    return value[0], value[1], value[2]


class _Head(NamedTuple):
    """A listed checkpoint's first part: what a page needs to load it."""

    partition: int
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    metadata_json: str | None


def _heads(con: duckdb.DuckDBPyConnection, q: CheckpointQuery, limit: int) -> list[_Head]:
    """The checkpoints asked for, in order."""
    where = ["kind = 'checkpoint'", "part = 0"]
    params: list[Any] = []
    for column, value in (
        ("thread_id", q.thread_id),
        ("checkpoint_ns", q.checkpoint_ns),
        ("checkpoint_id", q.checkpoint_id),
    ):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if q.before is not None:
        where.append("checkpoint_id < ?")
        params.append(q.before)
    if q.cursor is not None:
        where.append(
            "(checkpoint_id < ? OR (checkpoint_id = ? AND (thread_id > ? OR "
            "(thread_id = ? AND checkpoint_ns > ?))))"
        )
        cid, thread, ns = q.cursor
        params += [cid, cid, thread, thread, ns]
    sql = (
        f"SELECT {_columns(_Head._fields)} FROM checkpoints "
        f"WHERE {' AND '.join(where)} ORDER BY {_ORDER}"
    )
    if not q.filter:  # a metadata filter is matched here, in Python: it must see every row
        sql += " LIMIT ?"
        params.append(limit)
    rows = (_Head(*row) for row in con.execute(sql, params).fetchall())
    matching = (r for r in rows if _matches(r.metadata_json, q.filter))
    return list(itertools.islice(matching, limit))


def _columns(fields: tuple[str, ...]) -> str:
    """The ``checkpoints`` columns a row type names (its ``_fields``), in its order."""
    return ", ".join(f'"{f}"' for f in fields)


def _matches(metadata_json: str | None, wanted: Mapping[str, Any] | None) -> bool:
    if not wanted:
        return True
    metadata = json.loads(metadata_json or "{}")
    return all(k in metadata and metadata[k] == v for k, v in wanted.items())


def list_checkpoints(
    con: duckdb.DuckDBPyConnection, q: CheckpointQuery, limit: int
) -> tuple[list[CheckpointItem], bool]:
    """The complete checkpoints ``q`` asks for, newest first, at most ``limit``; and
    whether more are there (only their heads are read: a page loads what it returns)."""
    heads = _heads(con, q, limit + 1)
    items = []
    for head in heads[:limit]:
        item = _checkpoint(con, head)
        if item is not None:
            items.append(item)
    return items, len(heads) > limit


class _Own(NamedTuple):
    """A part of a checkpoint or of a write pending on it."""

    kind: str
    part: int
    parts: int
    value_type: str
    data: bytes
    parent_checkpoint_id: str | None
    metadata_type: str | None
    metadata: bytes | None
    channel_versions_json: str | None
    task_id: str | None
    task_path: str | None
    idx: int | None
    channel: str | None


_OWN_PARTS: Final = f"""
SELECT {_columns(_Own._fields)}
FROM checkpoints
WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id = ? AND kind IN ('checkpoint', 'write')
ORDER BY kind, task_path, task_id, idx, part
"""


def _checkpoint(con: duckdb.DuckDBPyConnection, h: _Head) -> CheckpointItem | None:
    """One checkpoint with its values and writes; None while a part of it is missing."""
    head: dict[int, bytes] = {}
    first: _Own | None = None
    writes: dict[tuple[str | None, int | None], tuple[_Own, dict[int, bytes]]] = {}
    key = [h.thread_id, h.checkpoint_ns, h.checkpoint_id]
    for row in (_Own(*r) for r in con.execute(_OWN_PARTS, key).fetchall()):
        if row.kind == "checkpoint":
            first = first or row
            head[row.part] = row.data
        else:
            writes.setdefault((row.task_id, row.idx), (row, {}))[1][row.part] = row.data
    data = None if first is None else join_parts(head, first.parts)
    if first is None or data is None:
        return None
    versions = json.loads(first.channel_versions_json or "{}")
    return CheckpointItem(
        partition=h.partition,
        thread_id=h.thread_id,
        checkpoint_ns=h.checkpoint_ns,
        checkpoint_id=h.checkpoint_id,
        parent_checkpoint_id=first.parent_checkpoint_id,
        type=first.value_type,
        data=data,
        metadata_type=first.metadata_type or "json",
        metadata=first.metadata or b"{}",
        blobs=_blobs(con, h.thread_id, h.checkpoint_ns, versions),
        writes=_writes(writes.values()),
    )


def _writes(found: Iterable[tuple[_Own, dict[int, bytes]]]) -> list[CheckpointWrite]:
    """The complete writes in LangGraph's order: (task_path, task_id, idx)."""
    out = []
    for row, parts in found:
        data = join_parts(parts, row.parts)
        if data is not None:
            out.append(CheckpointWrite.of(row, data))
    return sorted(out, key=lambda w: (w.task_path, w.task_id, w.idx))


class _Blob(NamedTuple):
    """A part of a channel value."""

    channel: str
    version: str
    value_type: str
    part: int
    parts: int
    data: bytes


def _blobs(
    con: duckdb.DuckDBPyConnection, thread: str, ns: str, versions: Mapping[str, str]
) -> list[CheckpointBlob]:
    """The stored values of the channels at the versions named (empty ones left out)."""
    if not versions:
        return []
    pairs = sorted(versions.items())
    marks = ", ".join("(?, ?)" for _ in pairs)
    columns = ", ".join(f"c.{name}" for name in _Blob._fields)
    sql = (
        f"SELECT {columns} FROM checkpoints c JOIN (VALUES {marks}) v(channel, version) "
        "ON c.channel = v.channel AND c.version = v.version "
        "WHERE c.kind = 'blob' AND c.thread_id = ? AND c.checkpoint_ns = ? "
        "ORDER BY c.channel, c.part"
    )
    params: list[Any] = [x for pair in pairs for x in pair] + [thread, ns]
    found: dict[str, tuple[_Blob, dict[int, bytes]]] = {}
    for row in (_Blob(*r) for r in con.execute(sql, params).fetchall()):
        found.setdefault(row.channel, (row, {}))[1][row.part] = row.data
    out = []
    for channel, (row, parts) in sorted(found.items()):
        data = join_parts(parts, row.parts)
        if data is not None and row.value_type != "empty":
            out.append(
                CheckpointBlob(channel=channel, version=row.version, type=row.value_type, data=data)
            )
    return out


# --- raw parts: what deletions, prunes and copies work from ----------------------------

_LEFT_OUT: Final = ("metadata", "data")
"""The columns of a part read only when asked for (``with_data``)."""


def list_parts(
    con: duckdb.DuckDBPyConnection,
    *,
    thread_id: str | None = None,
    run_ids: Sequence[str] = (),
    start_after: tuple[str, int] | None = None,
    with_data: bool = False,
    limit: int,
) -> list[CheckpointPart]:
    """Rows of one thread, or of the checkpoints of ``run_ids`` and the writes pending on
    them, in (record_key, part) order after ``start_after``; ``data`` only ``with_data``."""
    where: list[str] = []
    params: list[Any] = []
    if thread_id is not None:
        where.append("thread_id = ?")
        params.append(thread_id)
    if run_ids:
        marks = ", ".join("?" * len(run_ids))
        where.append(
            f"(run_id IN ({marks}) OR (kind = 'write' AND (thread_id, checkpoint_ns, "
            "checkpoint_id) IN (SELECT thread_id, checkpoint_ns, checkpoint_id FROM "
            f"checkpoints WHERE kind = 'checkpoint' AND run_id IN ({marks}))))"
        )
        params += [*run_ids, *run_ids]
    if thread_id is None and not run_ids:
        raise InvalidArgumentError("name a thread or at least one run id")
    if start_after is not None:
        where.append("(record_key > ? OR (record_key = ? AND part > ?))")
        params += [start_after[0], start_after[0], start_after[1]]
    names = list(CheckpointPart.model_fields)  # checked against checkpoint.avsc at import
    columns = ", ".join(
        f'NULL AS "{n}"' if n in _LEFT_OUT and not with_data else f'"{n}"' for n in names
    )
    sql = (
        f"SELECT {columns} FROM checkpoints WHERE {' AND '.join(where)} "
        "ORDER BY record_key, part LIMIT ?"
    )
    rows = con.execute(sql, [*params, limit]).fetchall()
    return [CheckpointPart(**dict(zip(names, row, strict=True))) for row in rows]
