"""Straight-line Avro readers, generated from a parsed ``.avsc`` schema at import.

fastavro's ``schemaless_reader`` spends most of its time on per-call setup for
records this small (docs/performance.md), and a reader
written as one function per field pays a Python call and a returned
``(value, position)`` tuple per field. This module turns a schema into the
source of ONE function that reads every field inline (every varint, and every
string or blob of a one-byte length, without a call; longer lengths go to
:func:`read_text` / :func:`read_raw`) and builds the models of
:mod:`oncelog.schemas.models` by field name (:mod:`oncelog.schemas.layout`
checked that they match). The source is compiled once.

A generated reader is an accelerator, not a second source of truth: it raises
:class:`UnsureError` (or lets an ``IndexError`` or ``UnicodeDecodeError``
escape) at anything it is not sure of (truncation, a negative length, a
boolean byte other than 0/1, an index out of range or spelt in more than one
byte, an over-long varint, an ``int`` beyond 32 bits, a block-sized array,
trailing bytes), and :class:`~oncelog.schemas.fast_paths.FastPath` turns that into
``None``, so the codec takes the fastavro path with its exact verdict. A schema type it
does not read (a map, a logical type) raises :class:`UnsupportedError` at generation: no
fast reader, fastavro reads. ``tests/schemas/`` checks the readers against fastavro on
valid and corrupted records.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from typing import Any

from oncelog.schemas.avro_read import UnsureError, read_raw, read_text
from oncelog.schemas.emitter import Emitter
from oncelog.schemas.layout import model_fields, model_of, named_types


class UnsupportedError(Exception):
    """The schema has a type the generator does not read (fastavro reads it)."""


_INT_MIN = -(1 << 31)
_INT_MAX = (1 << 31) - 1


class _Emitter(Emitter):
    """Accumulates the lines of the generated function and the names it uses."""

    def __init__(self, named: dict[str, Any]) -> None:
        scope: dict[str, Any] = {f.__name__: f for f in (UnsureError, read_raw, read_text)}
        scope["unpack_f"] = struct.Struct("<f").unpack_from
        scope["unpack_d"] = struct.Struct("<d").unpack_from
        super().__init__(named, scope)

    def add(self, indent: int, *lines: str) -> None:
        self.lines.extend(" " * indent + line for line in lines)

    def value(self, t: Any, target: str, indent: int) -> None:
        """Lines that read a value of type ``t`` at ``pos`` into ``target``, advancing ``pos``."""
        t = self.resolved(t)
        if isinstance(t, list):
            self._union(t, target, indent)
            return
        if isinstance(t, dict):
            if "logicalType" in t:  # fastavro converts those: leave them to it
                raise UnsupportedError(t["logicalType"])
            kind = t["type"]
            if kind in ("record", "enum", "array", "fixed"):
                getattr(self, f"_{kind}")(t, target, indent)
                return
            t = kind  # {"type": "string"} and the like
        reader = getattr(self, f"_{t}", None)
        if not isinstance(t, str) or reader is None:
            raise UnsupportedError(repr(t))
        reader(target, indent)

    def _null(self, target: str, indent: int) -> None:
        self.add(indent, f"{target} = None")

    def _string(self, target: str, indent: int, decode: str = ".decode()") -> None:
        reader = "read_text" if decode else "read_raw"
        self.add(
            indent,
            "b = data[pos]",
            "if b < 0x80 and not b & 1:",  # a one-byte, non-negative length
            "    end = pos + 1 + (b >> 1)",
            "    if end > size:",
            "        raise UnsureError",
            f"    {target} = data[pos + 1:end]{decode}",
            "    pos = end",
            "else:",
            f"    {target}, pos = {reader}(data, pos)",
        )

    def _bytes(self, target: str, indent: int) -> None:
        self._string(target, indent, decode="")

    def _long(self, target: str, indent: int) -> None:
        self.add(
            indent,
            "b = data[pos]",
            "if b < 0x80:",
            f"    {target} = (b >> 1) ^ -(b & 1)",
            "    pos += 1",
            "else:",  # a longer varint, as read_long reads it, without the call
            "    n = b & 0x7F",
            "    shift = 7",
            "    pos += 1",
            "    while True:",
            "        b = data[pos]",
            "        pos += 1",
            "        n |= (b & 0x7F) << shift",
            "        if b < 0x80:",
            "            break",
            "        shift += 7",
            "        if shift > 63:",
            "            raise UnsureError",
            "    if n >> 64:",
            "        raise UnsureError",
            f"    {target} = (n >> 1) ^ -(n & 1)",
        )

    def _int(self, target: str, indent: int) -> None:
        self._long(target, indent)
        self.add(indent, f"if not {_INT_MIN} <= {target} <= {_INT_MAX}:", "    raise UnsureError")

    def _boolean(self, target: str, indent: int) -> None:
        self.add(indent, "b = data[pos]", "if b > 1:", "    raise UnsureError")
        self.add(indent, f"{target} = b == 1", "pos += 1")

    def _float(self, target: str, indent: int, width: int = 4, unpack: str = "unpack_f") -> None:
        self.add(indent, f"{target} = {unpack}(data, pos)[0]", f"pos += {width}")

    def _double(self, target: str, indent: int) -> None:
        self._float(target, indent, 8, "unpack_d")

    def _fixed(self, t: Any, target: str, indent: int) -> None:
        size = t["size"]
        self.add(indent, f"if pos + {size} > size:", "    raise UnsureError")
        self.add(indent, f"{target} = data[pos:pos + {size}]", f"pos += {size}")

    def _enum(self, t: Any, target: str, indent: int) -> None:
        # A zig-zag index in one byte; anything else (negative, out of range, a
        # multi-byte spelling) is fastavro's to judge.
        members = tuple(model_of(t["name"]))
        if len(members) > 64:
            raise UnsupportedError(f"{t['name']}: over 64 symbols")
        name = self.bind("E_", members)
        self.add(indent, "b = data[pos]", f"if b & 1 or b >= {2 * len(members)}:")
        self.add(indent, "    raise UnsureError", f"{target} = {name}[b >> 1]", "pos += 1")

    def _union(self, branches: list[Any], target: str, indent: int) -> None:
        if len(branches) > 64:
            raise UnsupportedError("a union of over 64 branches")
        self.add(indent, "b = data[pos]", "pos += 1")
        for index, branch in enumerate(branches):
            self.add(indent, f"{'if' if index == 0 else 'elif'} b == {2 * index}:")
            self.value(branch, target, indent + 4)
        self.add(indent, "else:", "    raise UnsureError")

    def _record(self, t: Any, target: str, indent: int) -> None:
        cls = model_of(t["name"])
        name = self.bind(f"C_{cls.__name__}_", cls)
        local = {}
        for field in t["fields"]:
            local[field["name"]] = self.fresh("v")
            self.value(field["type"], local[field["name"]], indent)
        # By name, in the model's order; fields the model derives were read and are dropped.
        # A field an older layout lacks takes the model's default (an older writer schema).
        for field in model_fields(cls):
            if field not in local:
                defaults = getattr(cls, "_field_defaults", {})
                if field not in defaults:
                    raise UnsupportedError(f"{t['name']}: no {field}")
                local[field] = self.bind(f"D_{field}_", defaults[field])
        args = ", ".join(local[field] for field in model_fields(cls))
        if hasattr(cls, "_fields"):  # a NamedTuple: as its _make makes it, with no frame
            self.add(indent, f"{target} = tuple.__new__({name}, ({args},))")
        elif slotted_dataclass(cls):  # every slot set through its descriptor, with no frame
            self.add(indent, f"{target} = object.__new__({name})")
            for field in model_fields(cls):
                setter = self.bind(f"S_{cls.__name__}_", getattr(cls, field).__set__)
                self.add(indent, f"{setter}({target}, {local[field]})")
        else:
            self.add(indent, f"{target} = {name}({args})")

    def _array(self, t: Any, target: str, indent: int) -> None:
        items, count, item = self.fresh("items"), self.fresh("count"), self.fresh("item")
        self.add(indent, f"{items} = []", "while True:")
        self._long(count, indent + 4)
        self.add(indent, f"    if {count} == 0:", "        break")
        # A negative count is a block with a byte size: legal, rare, left to fastavro.
        self.add(indent, f"    if {count} < 0:", "        raise UnsureError")
        self.add(indent, f"    for _ in range({count}):")
        self.value(t["items"], item, indent + 8)
        self.add(indent, f"        {items}.append({item})", f"{target} = tuple({items})")


def slotted_dataclass(cls: type) -> bool:
    """A dataclass whose fields are all slots and that has no ``__post_init__`` to run."""
    names = set(getattr(cls, "__dataclass_fields__", {}))
    slots = set(getattr(cls, "__slots__", ()))
    return bool(names) and names == slots and not hasattr(cls, "__post_init__")


def _reader_lines(schema: Any, signature: str) -> _Emitter:
    """The emitter holding the reader function of ``schema``, ``def <signature>:`` and its body."""
    emitter = _Emitter(named_types(schema))
    emitter.add(0, f"def {signature}:", "    size = len(data)")
    emitter.value(schema, "value", 4)
    emitter.add(4, "if pos != size:", "    raise UnsureError", "return value")
    return emitter


def compile_reader(schema: Any) -> Callable[[bytes, int], Any]:
    """``read(data, pos)``: the model in ``data[pos:]``, which must end with it.

    Raises :class:`UnsupportedError` for a schema it cannot read, and at read time
    :class:`UnsureError` (or an ``IndexError`` ...) when fastavro must judge.
    """
    name = "read_" + schema["name"].rsplit(".", 1)[-1]
    emitter = _reader_lines(schema, f"{name}(data, pos)")
    source = "\n".join(emitter.lines)
    exec(compile(source, f"<oncelog.schemas.inline_reader:{name}>", "exec"), emitter.scope)
    reader: Callable[[bytes, int], Any] = emitter.scope[name]
    return reader


_MODULE_HEAD = '''"""The {record} reader, generated from {avsc} by oncelog.schemas.inline_reader.

Do not edit: `python -m oncelog.schemas.inline_reader` rewrites it, and
tests/schemas/test_generated_reader.py fails while it differs from the generator's
output. It is a file, not an exec'd string, so that mypyc compiles it (setup.py).
"""

import struct
from typing import Any

from oncelog.schemas import models
from oncelog.schemas.avro_read import UnsureError, read_raw, read_text

unpack_f = struct.Struct("<f").unpack_from
unpack_d = struct.Struct("<d").unpack_from
'''


def module_source(schema: Any, avsc: str) -> str:
    """The source of a module whose ``read(data, pos)`` is :func:`compile_reader`'s reader.

    The same lines, with the names they use bound at module level and their
    locals declared, so that mypyc compiles it with machine integers.
    """
    emitter = _reader_lines(schema, "read(data: bytes, pos: int) -> Any")
    lines = [_MODULE_HEAD.format(record=schema["name"].rsplit(".", 1)[-1], avsc=avsc)]
    for name, value in emitter.scope.items():
        if name.startswith("C_"):
            lines.append(f"{name} = models.{value.__name__}")
        elif name.startswith("S_"):  # a slot's setter: the member descriptor's __set__
            slot = value.__self__
            owner = slot.__objclass__.__name__
            lines.append(f"{name}: Any = vars(models.{owner})[{slot.__name__!r}].__set__")
        elif name.startswith("E_"):
            lines.append(f"{name} = tuple(models.{type(value[0]).__name__})")
        elif name.startswith("D_") and (value is None or type(value) in (bool, int, str)):
            lines.append(f"{name} = {value!r}")  # an older layout's missing field
        elif name.startswith("D_"):
            raise UnsupportedError(f"{name}: a default the module cannot spell")
    body = emitter.lines
    local = sorted({m for line in body for m in re.findall(_LOCAL, line)})
    declared = [f"    {name}: Any" for name in (*local, "value")]
    return "\n".join([*lines, "", "", body[0], *declared, *body[1:], ""])


_LOCAL = r"\b(?:v|items|count|item)\d+\b"


def generated_modules() -> list[tuple[str, Any, str]]:
    """The reader modules written as files for mypyc: (module name in ``oncelog.schemas``,
    schema, the ``.avsc`` it comes from). Most requests and decisions (every one without an
    approval) are written in the previous release's layout, so its readers are here too."""
    from oncelog.schemas.layout import CURRENT, DECISION, REQUEST  # noqa: PLC0415
    from oncelog.schemas.previous import DECISION_SCHEMA, REQUEST_SCHEMA  # noqa: PLC0415

    return [
        ("request_reader", CURRENT[REQUEST], "request.avsc"),
        ("request_reader_previous", REQUEST_SCHEMA, "history/request.v5.avsc"),
        ("decision_reader", CURRENT[DECISION], "decision.avsc"),
        ("decision_reader_previous", DECISION_SCHEMA, "history/decision.v5.avsc"),
    ]


if __name__ == "__main__":
    from oncelog.schemas.layout import SCHEMA_DIR

    for name, schema, avsc in generated_modules():
        (SCHEMA_DIR / f"{name}.py").write_text(module_source(schema, avsc), encoding="utf-8")
