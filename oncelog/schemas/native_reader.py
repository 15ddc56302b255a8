"""Avro readers in the Rust extension: a schema turned into the program its reader runs.

:class:`oncelog._native.AvroReader` knows Avro, not oncelog's records: it runs a program,
a tree of tuples built here from the parsed ``.avsc`` by the rules the generated Python
readers follow (:mod:`oncelog.schemas.inline_reader`): each record builds the model
:func:`~oncelog.schemas.layout.model_of` names, its fields by name in the model's order,
a field the model derives read and dropped, a field an older layout lacks taken from the
model's default. So the schema stays the one source of the layout. The nodes:

- ``(primitive,)`` for ``null``, ``boolean``, ``int``, ``long``, ``float``, ``double``,
  ``string``, ``bytes``; ``("fixed", size)``;
- ``("enum", members)``: the model enum's members in the symbols' order;
- ``("union", branches)``, ``("array", item)`` (items as a tuple);
- ``("record", how, class, fields, sources)``: ``fields`` the schema's, in its order;
  ``sources`` the model's fields in its order, ``(name, index into fields)`` or
  ``(name, None, default)``; ``how`` is ``"tuple"`` (a NamedTuple, filled in place),
  ``"slots"`` (a slotted dataclass, its slots filled) or ``"call"`` (the class called).

Like the Python readers, the Rust one is an accelerator: it answers ``None`` wherever it
is unsure, and the codec lets fastavro judge.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from oncelog.native_core import NATIVE
from oncelog.schemas.fast_paths import FastPath
from oncelog.schemas.inline_reader import UnsupportedError, slotted_dataclass
from oncelog.schemas.layout import CURRENT, model_fields, model_of, named_types

_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "string", "bytes"})
# A one-byte zig-zag index reaches 63.
_MAX_INDEX = 64


class _Builder:
    """The program of one schema, node by node, its named types resolved."""

    def __init__(self, named: dict[str, Any]) -> None:
        self.named = named

    def node(self, t: Any) -> tuple[Any, ...]:
        """The program node reading a value of type ``t``."""
        t = self.named[t] if isinstance(t, str) and t in self.named else t
        if isinstance(t, list):
            if len(t) > _MAX_INDEX:
                raise UnsupportedError("a union of over 64 branches")
            return ("union", tuple(self.node(branch) for branch in t))
        if isinstance(t, dict):
            if "logicalType" in t:  # fastavro converts those: leave them to it
                raise UnsupportedError(t["logicalType"])
            kind = t["type"]
            if kind == "record":
                return self._record(t)
            if kind == "enum":
                return self._enum(t)
            if kind == "array":
                return self._array(t)
            if kind == "fixed":
                return ("fixed", t["size"])
            t = kind  # {"type": "string"} and the like
        if not isinstance(t, str) or t not in _PRIMITIVES:
            raise UnsupportedError(repr(t))
        return (t,)

    def _enum(self, t: Any) -> tuple[Any, ...]:
        members = tuple(model_of(t["name"]))
        if len(members) > _MAX_INDEX:
            raise UnsupportedError(f"{t['name']}: over 64 symbols")
        return ("enum", members)

    def _array(self, t: Any) -> tuple[Any, ...]:
        item = self.node(t["items"])
        # The reader bounds a block's count by the bytes left: an item takes one at least.
        if _may_be_empty(item):
            raise UnsupportedError("an array of items that may take no bytes")
        return ("array", item)

    def _record(self, t: Any) -> tuple[Any, ...]:
        cls = model_of(t["name"])
        fields = tuple(self.node(field["type"]) for field in t["fields"])
        index = {field["name"]: i for i, field in enumerate(t["fields"])}
        defaults = getattr(cls, "_field_defaults", {})
        sources: list[tuple[Any, ...]] = []
        for name in model_fields(cls):
            if name in index:
                sources.append((name, index[name]))
            elif name in defaults:  # an older layout's missing field
                sources.append((name, None, defaults[name]))
            else:
                raise UnsupportedError(f"{t['name']}: no {name}")
        if hasattr(cls, "_fields"):
            how = "tuple"
        elif slotted_dataclass(cls):
            how = "slots"
        else:
            how = "call"
        return ("record", how, cls, fields, tuple(sources))


def _may_be_empty(node: tuple[Any, ...]) -> bool:
    """Whether a value of ``node`` may be written in no bytes at all."""
    kind = node[0]
    if kind == "null":
        return True
    if kind == "fixed":
        return bool(node[1] == 0)
    if kind == "record":
        return all(_may_be_empty(field) for field in node[3])
    return False  # every other type writes a length, an index or a value


def program(schema: Any) -> tuple[Any, ...]:
    """The reader program of ``schema`` (a parsed ``.avsc``); :class:`UnsupportedError` for
    a schema it cannot read (fastavro reads it)."""
    return _Builder(named_types(schema)).node(schema)


def natively_read(path: FastPath, previous_schema: Any) -> FastPath:
    """``path`` with the extension's readers of its record type's current layout and of
    ``previous_schema``, where the extension is built (else ``path`` as it is). Each reader
    is ``read(data, pos)``: the model in ``data[pos:]``, which must end with it, or ``None``
    when fastavro must judge."""
    if NATIVE is None:
        return path
    current = NATIVE.AvroReader(program(CURRENT[path.name]))
    previous = NATIVE.AvroReader(program(previous_schema))
    return dataclasses.replace(path, read_current=current.read, read_previous=previous.read)
