"""The wire layout, read from the ``.avsc`` files: what the codecs are generated from.

The ``.avsc`` files are the one source of the layout. The models of
:mod:`oncelog.schemas.models` name their fields after the schema's (an Avro
record ``dev.oncelog.X`` is the class ``models.X``, an Avro enum the ``StrEnum`` of
that name) and are checked against the schemas when this module is imported:
a model that misses a field, has one the schema lacks, or an enum whose symbols
differ, raises :class:`LayoutError`; so does the stored checkpoint part the query
API answers (:class:`~oncelog.schemas.checkpoint_answers.CheckpointPart`). A schema
field that the model derives (a property, such as ``Decision.version``) is written
from the property and dropped on read. The models' field order is free: the generated readers,
writers and converters map by name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final, get_args

from fastavro.schema import load_schema

from oncelog.errors import LedgerError
from oncelog.schemas import models
from oncelog.schemas.checkpoint_answers import CheckpointPart

SCHEMA_DIR: Final = Path(__file__).parent

REQUEST: Final = "dev.oncelog.Request"
SNAPSHOT: Final = "dev.oncelog.ExecutionSnapshot"
DECISION: Final = "dev.oncelog.Decision"
STATE: Final = "dev.oncelog.ExecutionState"
CHECKPOINT: Final = "dev.oncelog.CheckpointRecord"

# The record files of the current schemas; dev.oncelog.*.avsc are named types they include.
FILES: Final = {
    REQUEST: "request",
    SNAPSHOT: "execution_snapshot",
    DECISION: "decision",
    CHECKPOINT: "checkpoint",
}


class LayoutError(LedgerError):
    """A model does not match its record or enum in the ``.avsc`` files (raised at import)."""


def load(stem: str) -> Any:
    """The parsed schema of ``<stem>.avsc`` in this package (named types resolved)."""
    return load_schema(str(SCHEMA_DIR / f"{stem}.avsc"))


def named_types(schema: Any) -> dict[str, Any]:
    """Every record and enum defined in ``schema``, by full name."""
    found: dict[str, Any] = {}
    _collect(schema, found)
    return found


def _collect(t: Any, found: dict[str, Any]) -> None:
    if isinstance(t, list):
        for branch in t:
            _collect(branch, found)
    elif isinstance(t, dict):
        kind = t["type"]
        if kind in ("record", "enum"):
            found[t["name"]] = t
        if kind == "record":
            for field in t["fields"]:
                _collect(field["type"], found)
        elif kind == "array":
            _collect(t["items"], found)
        elif kind == "map":
            _collect(t["values"], found)


def model_of(name: str) -> Any:
    """The class of :mod:`oncelog.schemas.models` for the Avro type ``name``."""
    short = name.rsplit(".", 1)[-1]
    cls = getattr(models, short, None)
    if not isinstance(cls, type):
        raise LayoutError(f"{name} in the .avsc files has no class models.{short}")
    return cls


def model_fields(cls: type) -> tuple[str, ...]:
    """The fields of a model, in its constructor's order (NamedTuple or dataclass)."""
    fields: tuple[str, ...] | None = getattr(cls, "_fields", None)
    if fields is not None:
        return fields
    return tuple(f.name for f in dataclasses.fields(cls))


def derived_fields(record: Any) -> tuple[str, ...]:
    """The fields of ``record`` its model derives (a property) instead of storing."""
    stored = set(model_fields(model_of(record["name"])))
    return tuple(f["name"] for f in record["fields"] if f["name"] not in stored)


def _check_record(record: Any) -> None:
    cls = model_of(record["name"])
    names = [f["name"] for f in record["fields"]]
    stored = model_fields(cls)
    extra = [n for n in stored if n not in names]
    derived = {n for n in names if isinstance(getattr(cls, n, None), property)}
    missing = [n for n in names if n not in stored and n not in derived]
    if extra or missing:
        raise LayoutError(
            f"models.{cls.__name__} does not match {record['name']} in the .avsc files:"
            f" fields missing from the model {missing}, fields not in the schema {extra}"
        )


def _check_enum(enum: Any) -> None:
    cls = model_of(enum["name"])
    values = [member.value for member in cls]
    if values != enum["symbols"]:
        raise LayoutError(
            f"models.{cls.__name__} has the symbols {values}, {enum['name']} in the .avsc"
            f" files {enum['symbols']} (same symbols, same order)"
        )


def check(schema: Any) -> None:
    """Raise :class:`LayoutError` unless every record and enum of ``schema`` matches its model."""
    for t in named_types(schema).values():
        if t["type"] == "record":
            _check_record(t)
        else:
            _check_enum(t)


PART_COLUMNS: Final = ("record_key", "partition", "offset")
"""What a stored checkpoint part has besides its record's fields: its key and place on the log."""


def check_part(record: Any, part: type[CheckpointPart] = CheckpointPart) -> None:
    """Raise :class:`LayoutError` unless ``part`` (a row of the ``checkpoints`` table as the
    API answers it) has every field of ``record`` and :data:`PART_COLUMNS`, and nothing else,
    and takes None for every optional field of the record."""
    fields = part.model_fields
    names = [f["name"] for f in record["fields"]]
    missing = [n for n in (*PART_COLUMNS, *names) if n not in fields]
    extra = [n for n in fields if n not in names and n not in PART_COLUMNS]
    required = [
        f["name"]
        for f in record["fields"]
        if _optional(f["type"])
        and f["name"] in fields
        and type(None) not in get_args(fields[f["name"]].annotation)
    ]
    if missing or extra or required:
        raise LayoutError(
            f"{part.__name__} does not match {record['name']} in the .avsc files: fields"
            f" missing {missing}, fields not in the schema {extra}, optional fields that"
            f" do not take None {required}"
        )


def _optional(t: Any) -> bool:
    return isinstance(t, list) and len(t) == 2 and t[0] == "null"


def current() -> Iterator[tuple[str, Any]]:
    """The current schema of each record type, by name, loaded from the package's files."""
    for name, stem in FILES.items():
        yield name, load(stem)


CURRENT: Final[dict[str, Any]] = dict(current())
"""The current schemas (``request``, ``execution_snapshot``, ``decision``, ``checkpoint``), by
record name."""

STATE_SCHEMA: Final[Any] = load(STATE)
"""``dev.oncelog.ExecutionState.avsc``: the state blob's schema (also inside the records)."""

for _schema in (*CURRENT.values(), STATE_SCHEMA):
    check(_schema)
check_part(CURRENT[CHECKPOINT])
