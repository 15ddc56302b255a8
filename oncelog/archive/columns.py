"""The archive's Parquet columns, derived from ``request.avsc`` (the one source of layouts).

Each file holds, per record: its position and time on the log (``partition``, ``offset``,
``timestamp_ms``), its raw ``key`` and ``value`` bytes (what a rebuild decodes, exactly as
the projector did), and the request's fields decoded into columns of the same names as the
schema's: a union of records (``body``) becomes ``body_type`` (the branch's name) and a
struct ``body`` with one field per branch that has fields. A value that does not decode
keeps its bytes, null fields and its ``decode_error``.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any, Final

import pyarrow as pa
import pyarrow.parquet as pq

from oncelog.errors import CodecError
from oncelog.schemas import codec, layout

from .manifest import Record

_PRIMITIVES: Final = {
    "string": pa.string(),
    "bytes": pa.binary(),
    "int": pa.int32(),
    "long": pa.int64(),
    "boolean": pa.bool_(),
    "float": pa.float32(),
    "double": pa.float64(),
}

POSITION: Final = (
    pa.field("partition", pa.int32(), nullable=False),
    pa.field("offset", pa.int64(), nullable=False),
    pa.field("timestamp_ms", pa.int64(), nullable=False),
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("decode_error", pa.string()),
)


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _record_branches(t: Any) -> list[Any] | None:
    """The records of a union of two records or more (None: not such a union)."""
    if not isinstance(t, list):
        return None
    records = [b for b in t if isinstance(b, dict) and b.get("type") == "record"]
    return records if len(records) >= 2 else None


def arrow_type(t: Any, named: dict[str, Any]) -> pa.DataType:
    """The Arrow type of an Avro type of the request schema."""
    if isinstance(t, str):
        return _PRIMITIVES[t] if t in _PRIMITIVES else arrow_type(named[t], named)
    if isinstance(t, list):
        branches = [b for b in t if b != "null"]
        if len(branches) != 1:
            raise TypeError(f"no column layout for the union {t!r}")
        return arrow_type(branches[0], named)
    if t["type"] == "enum":
        return pa.string()
    if t["type"] == "record":
        return pa.struct([pa.field(f["name"], arrow_type(f["type"], named)) for f in t["fields"]])
    if t["type"] == "array":
        return pa.list_(arrow_type(t["items"], named))
    raise TypeError(f"no column layout for {t['type']!r}")


def _union_struct(branches: list[Any], named: dict[str, Any]) -> pa.DataType:
    # Parquet stores no struct without fields: a branch without any is in `<name>_type` only.
    return pa.struct(
        [pa.field(_short(b["name"]), arrow_type(b, named)) for b in branches if b["fields"]]
    )


def _schema() -> pa.Schema:
    request = layout.CURRENT[layout.REQUEST]
    named = layout.named_types(request)
    fields = list(POSITION)
    for f in request["fields"]:
        branches = _record_branches(f["type"])
        if branches is None:
            fields.append(pa.field(f["name"], arrow_type(f["type"], named)))
        else:
            fields.append(pa.field(f"{f['name']}_type", pa.string()))
            fields.append(pa.field(f["name"], _union_struct(branches, named)))
    return pa.schema(fields)


SCHEMA: Final = _schema()
_UNIONS: Final = frozenset(
    f["name"] for f in layout.CURRENT[layout.REQUEST]["fields"] if _record_branches(f["type"])
)


def _decoded(value: bytes | None) -> tuple[dict[str, Any], str | None]:
    """The request's fields by column, and why it did not decode (None: it did)."""
    if value is None:
        return {}, "no value"
    try:
        record = codec.request_record(value)
    except CodecError as exc:
        return {}, str(exc)
    columns: dict[str, Any] = {}
    for name, v in record.items():
        if name in _UNIONS:
            branch, body = v
            columns[f"{name}_type"] = _short(branch)
            columns[name] = {_short(branch): body} if body else {}
        else:
            columns[name] = v
    return columns, None


def table(partition: int, records: Sequence[Record]) -> pa.Table:
    """The archive's table of ``records`` (of one partition, in offset order)."""
    rows = []
    for r in records:
        columns, error = _decoded(r.value)
        rows.append(
            {
                **columns,
                "partition": partition,
                "offset": r.offset,
                "timestamp_ms": r.timestamp_ms,
                "key": r.key,
                "value": r.value,
                "decode_error": error,
            }
        )
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def parquet_bytes(partition: int, records: Sequence[Record]) -> bytes:
    """One Parquet file (zstd, one row group) of ``records``: the same records, the same bytes."""
    sink = io.BytesIO()
    pq.write_table(
        table(partition, records), sink, compression="zstd", row_group_size=len(records) or 1
    )
    return sink.getvalue()


def read_records(data: bytes) -> list[Record]:
    """The records of an archived file, as the log held them (position, time, bytes)."""
    got = pq.read_table(pa.BufferReader(data), columns=["offset", "timestamp_ms", "key", "value"])
    columns = got.to_pydict()
    return [
        Record(o, t, k, v)
        for o, t, k, v in zip(
            columns["offset"],
            columns["timestamp_ms"],
            columns["key"],
            columns["value"],
            strict=True,
        )
    ]
