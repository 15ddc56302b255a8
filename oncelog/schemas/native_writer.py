"""Avro writers in the Rust extension: a schema turned into the program its writer runs.

:class:`oncelog._native.AvroWriter` writes a fixed prefix (the single-object header) and
a model's schemaless body by a program built here from the parsed ``.avsc``, by the
rules of the generated Python writers (:mod:`oncelog.schemas.record_writer`): each
record's fields in the schema's order, read from the model by name (a NamedTuple whose
fields are the schema's, by position; a field the model derives, from its function). So
the bytes are those writers' and fastavro's, and the schema stays the one source. The
nodes:

- ``(primitive,)`` for ``null``, ``boolean``, ``int``, ``long``, ``string``, ``bytes``;
- ``("enum", {symbol: index})``;
- ``("optional", node)`` for ``["null", X]``; ``("branches", ((class, record), ...))``
  for a union of records, the branch by the model's exact class;
- ``("array", item)``;
- ``("record", size, fields)``: ``size`` the tuple's length when read by position, else
  None; each field ``(access, node)``, ``access`` an item index, an attribute name or a
  function of the model.

Where the extension is not built, :func:`natively_written` gives the Python writer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from oncelog.native_core import NATIVE
from oncelog.schemas import decision_derived, models
from oncelog.schemas.avro_write import prefixed
from oncelog.schemas.inline_reader import UnsupportedError
from oncelog.schemas.layout import model_fields, model_of, named_types

_PRIMITIVES: Final = frozenset({"null", "boolean", "int", "long", "string", "bytes"})

# The models whose derived fields are functions of a module (as the Python writers call).
_DERIVED_BY: Final[Mapping[type, Any]] = {models.Decision: decision_derived}


class _Builder:
    """The program of one schema, node by node, its named types resolved."""

    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named

    def resolved(self, t: Any) -> Any:
        return self.named[t] if isinstance(t, str) and t in self.named else t

    def node(self, t: Any) -> tuple[Any, ...]:
        """The program node writing a value of type ``t``."""
        t = self.resolved(t)
        if isinstance(t, list):
            return self._union(t)
        if isinstance(t, dict):
            if "logicalType" in t:
                raise UnsupportedError(t["logicalType"])
            kind = t["type"]
            if kind == "record":
                return self.record(t)
            if kind == "enum":
                model_of(t["name"])  # checked against the model by oncelog.schemas.layout
                return ("enum", {symbol: i for i, symbol in enumerate(t["symbols"])})
            if kind == "array":
                return ("array", self.node(t["items"]))
            t = kind
        if not isinstance(t, str) or t not in _PRIMITIVES:
            raise UnsupportedError(repr(t))
        return (t,)

    def _union(self, branches: list[Any]) -> tuple[Any, ...]:
        if len(branches) == 2 and branches[0] == "null":  # ["null", X]: the optional field
            return ("optional", self.node(branches[1]))
        records = [self.resolved(b) for b in branches]
        if not all(isinstance(r, dict) and r["type"] == "record" for r in records):
            raise UnsupportedError(f"union {branches}")
        return ("branches", tuple((model_of(r["name"]), self.record(r)) for r in records))

    def record(self, t: Any) -> tuple[Any, ...]:
        cls = model_of(t["name"])
        names = tuple(f["name"] for f in t["fields"])
        nodes = [self.node(f["type"]) for f in t["fields"]]
        if names and names == model_fields(cls) and hasattr(cls, "_fields"):
            return ("record", len(names), tuple(enumerate(nodes)))  # a NamedTuple in order
        return ("record", None, tuple(zip((_access(cls, n) for n in names), nodes, strict=True)))


def _access(cls: type, field: str) -> Any:
    """How the writer reads ``field`` of a ``cls``: its name, or the function deriving it."""
    module = _DERIVED_BY.get(cls)
    if module is not None and field not in model_fields(cls):
        return getattr(module, field)
    return field


def program(schema: Any) -> tuple[Any, ...]:
    """The writer program of ``schema`` (a parsed ``.avsc`` record); :class:`UnsupportedError`
    for a type it does not write."""
    return _Builder(named_types(schema)).record(schema)


def natively_written(
    prefix: bytes, python: Callable[[Any], bytes], schema: Any
) -> Callable[[Any], bytes]:
    """``write(model)``: ``prefix`` and the body of ``model`` (a record of ``schema``), by
    the extension where it is built, else by ``python`` (the generated writer of the body)."""
    if NATIVE is None:
        return python_written(prefix, python)
    write: Callable[[Any], bytes] = NATIVE.AvroWriter(program(schema), prefix).write
    return write


def python_written(prefix: bytes, python: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """``write(model)``: ``prefix`` and the body the generated writer ``python`` writes."""
    return prefixed(prefix, python) if prefix else python
