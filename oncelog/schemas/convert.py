"""Plain-dict (fastavro) forms of the models, both ways, built from the ``.avsc`` schemas.

For each record type a pair of converters is composed once, at import, from
the parsed schema (:mod:`oncelog.schemas.layout`): a record maps its fields
by name (a field the model derives is read from its property, and dropped on
the way back), an enum goes by its value, ``["null", X]`` keeps ``None``, a
union of records is fastavro's ``(name, datum)`` pair (``return_record_name``)
and an array is a list one way and a tuple the other. fastavro reads and
writes these dicts on the paths that do not take the generated codecs: older
writer schemas, records a fast reader was unsure of, and the state blobs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, Generic, TypeVar

from oncelog.schemas import layout, models

Convert = Callable[[Any], Any]
M = TypeVar("M")


def _same(value: Any) -> Any:
    return value


def _resolve(t: Any, named: dict[str, Any]) -> Any:
    if isinstance(t, str) and t in named:
        return named[t]
    if isinstance(t, dict) and t["type"] not in ("record", "enum", "array", "map", "fixed"):
        return t["type"]  # {"type": "string"} and the like
    return t


def _is_optional(t: Any) -> bool:
    return isinstance(t, list) and len(t) == 2 and t[0] == "null"


def _to_avro(t: Any, named: dict[str, Any]) -> Convert:
    """The model -> fastavro datum converter of type ``t``."""
    t = _resolve(t, named)
    if _is_optional(t):
        inner = _to_avro(t[1], named)
        return lambda v: None if v is None else inner(v)
    if isinstance(t, list):  # a union of records: fastavro's (name, datum) pair
        records = [_resolve(branch, named) for branch in t]
        branches = {layout.model_of(r["name"]): (r["name"], _to_avro(r, named)) for r in records}

        def to_branch(v: Any) -> tuple[str, Any]:
            name, convert = branches[type(v)]
            return name, convert(v)

        return to_branch
    if not isinstance(t, dict):
        return _same
    if t["type"] == "enum":
        return lambda v: v.value
    if t["type"] == "array":
        item = _to_avro(t["items"], named)
        return lambda v: [item(x) for x in v]
    if t["type"] == "map":
        value = _to_avro(t["values"], named)
        return lambda v: {k: value(x) for k, x in v.items()}
    if t["type"] == "fixed":
        return _same
    fields = [(f["name"], _to_avro(f["type"], named)) for f in t["fields"]]
    return lambda v: {name: convert(getattr(v, name)) for name, convert in fields}


def _from_avro(t: Any, named: dict[str, Any]) -> Convert:
    """The fastavro datum -> model converter of type ``t``."""
    t = _resolve(t, named)
    if _is_optional(t):
        inner = _from_avro(t[1], named)
        return lambda d: None if d is None else inner(d)
    if isinstance(t, list):
        branches = {b["name"]: _from_avro(b, named) for b in (_resolve(x, named) for x in t)}
        return lambda d: branches[d[0]](d[1])
    if not isinstance(t, dict) or t["type"] == "fixed":
        return _same
    if t["type"] == "enum":
        members = {m.value: m for m in layout.model_of(t["name"])}
        return members.__getitem__
    if t["type"] == "array":
        item = _from_avro(t["items"], named)
        return lambda d: tuple(item(x) for x in d)
    if t["type"] == "map":
        value = _from_avro(t["values"], named)
        return lambda d: {k: value(x) for k, x in d.items()}
    cls = layout.model_of(t["name"])
    types = {f["name"]: f["type"] for f in t["fields"]}
    # In the model's order; the fields the model derives are dropped. A field an older
    # layout lacks (read with that layout as the reader's) takes the model's default.
    defaults = getattr(cls, "_field_defaults", {})
    fields = [
        (name, _from_avro(types[name], named) if name in types else _const(defaults[name]))
        for name in layout.model_fields(cls)
    ]
    return lambda d: cls(*[convert(d.get(name)) for name, convert in fields])


def _const(value: Any) -> Convert:
    return lambda _: value


class AvroConverter(Generic[M]):
    """One record type's converters, model -> fastavro datum and back, from its schema."""

    def __init__(self, schema: Any) -> None:
        named = layout.named_types(schema)
        self._to, self._from = _to_avro(schema, named), _from_avro(schema, named)

    def to_avro(self, model: M) -> dict[str, Any]:
        """The fastavro datum of ``model``."""
        datum: dict[str, Any] = self._to(model)
        return datum

    def from_avro(self, datum: dict[str, Any]) -> M:
        """The model read from its fastavro datum."""
        model: M = self._from(datum)
        return model


REQUEST: Final = AvroConverter[models.Request](layout.CURRENT[layout.REQUEST])
STATE: Final = AvroConverter[models.ExecutionState](layout.STATE_SCHEMA)
SNAPSHOT: Final = AvroConverter[models.ExecutionSnapshot](layout.CURRENT[layout.SNAPSHOT])
# A decision's datum has the fields it derives written flat, as on the wire.
DECISION: Final = AvroConverter[models.Decision](layout.CURRENT[layout.DECISION])

# The names the codecs and tests import.
request_to_avro, request_from_avro = REQUEST.to_avro, REQUEST.from_avro
state_to_avro, state_from_avro = STATE.to_avro, STATE.from_avro
snapshot_to_avro, snapshot_from_avro = SNAPSHOT.to_avro, SNAPSHOT.from_avro
decision_to_avro, decision_from_avro = DECISION.to_avro, DECISION.from_avro
