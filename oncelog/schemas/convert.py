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
from typing import Any, Final

from oncelog.schemas import layout, models

Convert = Callable[[Any], Any]


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
    # In the model's order; the fields the model derives are dropped.
    fields = [(name, _from_avro(types[name], named)) for name in layout.model_fields(cls)]
    return lambda d: cls(*[convert(d[name]) for name, convert in fields])


def _pair(schema: Any) -> tuple[Convert, Convert]:
    named = layout.named_types(schema)
    return _to_avro(schema, named), _from_avro(schema, named)


_REQUEST: Final = _pair(layout.CURRENT[layout.REQUEST])
_STATE: Final = _pair(layout.STATE_SCHEMA)
_SNAPSHOT: Final = _pair(layout.CURRENT[layout.SNAPSHOT])
_DECISION: Final = _pair(layout.CURRENT[layout.DECISION])


def request_to_avro(request: models.Request) -> dict[str, Any]:
    """The fastavro datum of a request."""
    datum: dict[str, Any] = _REQUEST[0](request)
    return datum


def request_from_avro(d: dict[str, Any]) -> models.Request:
    """A request from its fastavro datum."""
    request: models.Request = _REQUEST[1](d)
    return request


def state_to_avro(s: models.ExecutionState) -> dict[str, Any]:
    """The fastavro datum of an execution state."""
    datum: dict[str, Any] = _STATE[0](s)
    return datum


def state_from_avro(d: dict[str, Any]) -> models.ExecutionState:
    """An execution state from its fastavro datum."""
    state: models.ExecutionState = _STATE[1](d)
    return state


def snapshot_to_avro(s: models.ExecutionSnapshot) -> dict[str, Any]:
    """The fastavro datum of a snapshot."""
    datum: dict[str, Any] = _SNAPSHOT[0](s)
    return datum


def snapshot_from_avro(d: dict[str, Any]) -> models.ExecutionSnapshot:
    """A snapshot from its fastavro datum."""
    snapshot: models.ExecutionSnapshot = _SNAPSHOT[1](d)
    return snapshot


def decision_to_avro(x: models.Decision) -> dict[str, Any]:
    """The fastavro datum of a decision (the fields it derives written flat, as on the wire)."""
    datum: dict[str, Any] = _DECISION[0](x)
    return datum


def decision_from_avro(d: dict[str, Any]) -> models.Decision:
    """A decision from its fastavro datum."""
    decision: models.Decision = _DECISION[1](d)
    return decision
