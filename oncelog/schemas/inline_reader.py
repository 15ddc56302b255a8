"""Straight-line Avro readers, generated once from a record layout.

A reader written as one function per field (``request_reader``'s primitives)
pays a Python call and a returned ``(value, position)`` tuple per field; a
decision has about 55 fields with its state and retry memory, and the calls
were most of its decoding time. This module turns a layout (a list of
:data:`Field` kinds) into the source of ONE function that reads every field
inline: every varint, and every string or blob of a one-byte length, without a
call; longer lengths are left to the primitives. The source is compiled once, at import.

The generated code follows the primitives' rules exactly: it raises
:class:`~oncelog.schemas.request_reader.UnsureError` (or lets an ``IndexError``
or ``UnicodeDecodeError`` escape) wherever they would, so the caller's
fallback to fastavro sees the same verdicts. ``tests/schemas/`` checks the
readers built here against fastavro on valid and corrupted records.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from oncelog.schemas.request_reader import UnsureError, read_long, read_raw, read_text


@dataclass(frozen=True)
class Field:
    """One field of a layout: its kind, and what the kind needs.

    ``kind`` is one of ``text``, ``raw`` (Avro bytes), ``long``, ``bool``,
    ``enum`` (``arg``: the name of the symbols tuple in the namespace, ``size``
    its length), ``optional`` (``inner``: the field inside ``["null", X]``),
    ``call`` (``arg``: the name of a ``(data, pos) -> (value, pos)`` reader),
    ``record`` (``arg``: the class name, ``fields``) or ``array`` (of
    ``inner``, a record: read into a tuple).
    """

    kind: str
    arg: str = ""
    size: int = 0
    inner: Field | None = None
    fields: tuple[Field, ...] = ()


TEXT = Field("text")
RAW = Field("raw")
LONG = Field("long")
BOOL = Field("bool")


def enum(symbols_name: str, size: int) -> Field:
    """An Avro enum of ``size`` symbols (at most 64: its index is one byte)."""
    assert 0 < size <= 64
    return Field("enum", symbols_name, size)


def optional(inner: Field) -> Field:
    """``["null", inner]``."""
    return Field("optional", inner=inner)


def call(reader_name: str) -> Field:
    """A field read by a function of the namespace (a rare or nested part)."""
    return Field("call", reader_name)


def record(class_name: str, fields: Sequence[Field]) -> Field:
    """A nested record, built with ``tuple.__new__(class, values)`` (a NamedTuple)."""
    return Field("record", class_name, fields=tuple(fields))


def array(item: Field) -> Field:
    """An Avro array of ``item`` records, read into a tuple."""
    return Field("array", inner=item)


class _Emitter:
    """Accumulates the lines of the generated function; names its temporaries."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._count = 0

    def fresh(self, stem: str) -> str:
        self._count += 1
        return f"{stem}{self._count}"

    def add(self, indent: int, *lines: str) -> None:
        self.lines.extend(" " * indent + line for line in lines)

    def field(self, field: Field, target: str, indent: int) -> None:
        """Lines that read ``field`` at ``pos`` into ``target`` and advance ``pos``."""
        getattr(self, f"_{field.kind}")(field, target, indent)

    def _text(self, field: Field, target: str, indent: int, decode: str = ".decode()") -> None:
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

    def _raw(self, field: Field, target: str, indent: int) -> None:
        self._text(field, target, indent, decode="")

    def _long(self, field: Field, target: str, indent: int) -> None:
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

    def _bool(self, field: Field, target: str, indent: int) -> None:
        self.add(indent, "b = data[pos]", "if b > 1:", "    raise UnsureError")
        self.add(indent, f"{target} = b == 1", "pos += 1")

    def _enum(self, field: Field, target: str, indent: int) -> None:
        # A zig-zag index in one byte; anything else (negative, out of range, a
        # multi-byte spelling) is fastavro's to judge.
        self.add(indent, "b = data[pos]", f"if b & 1 or b >= {2 * field.size}:")
        self.add(indent, "    raise UnsureError", f"{target} = {field.arg}[b >> 1]", "pos += 1")

    def _optional(self, field: Field, target: str, indent: int) -> None:
        assert field.inner is not None
        self.add(indent, "b = data[pos]", "if b == 0:", f"    {target} = None", "    pos += 1")
        self.add(indent, "elif b == 2:", "    pos += 1")
        self.field(field.inner, target, indent + 4)
        self.add(indent, "else:", "    raise UnsureError")

    def _call(self, field: Field, target: str, indent: int) -> None:
        self.add(indent, f"{target}, pos = {field.arg}(data, pos)")

    def _record(self, field: Field, target: str, indent: int) -> None:
        values = [self.fresh("v") for _ in field.fields]
        for part, value in zip(field.fields, values, strict=True):
            self.field(part, value, indent)
        self.add(indent, f"{target} = new({field.arg}, ({', '.join(values)},))")

    def _array(self, field: Field, target: str, indent: int) -> None:
        assert field.inner is not None
        items, count, item = self.fresh("items"), self.fresh("count"), self.fresh("item")
        self.add(indent, f"{items} = []", "while True:")
        self.field(LONG, count, indent + 4)
        self.add(indent, f"    if {count} == 0:", "        break")
        # A negative count is a block with a byte size: legal, rare, left to fastavro.
        self.add(indent, f"    if {count} < 0:", "        raise UnsureError")
        self.add(indent, f"    for _ in range({count}):")
        self.field(field.inner, item, indent + 8)
        self.add(indent, f"        {items}.append({item})", f"{target} = tuple({items})")


def compile_reader(
    name: str, fields: Sequence[tuple[str, Field]], finish: Sequence[str],
    namespace: Mapping[str, Any],
) -> Callable[..., Any]:  # fmt: skip
    """``def name(data, pos)`` reading ``fields`` into locals of their names, then ``finish``.

    ``finish`` is the function's last lines (checks, the ``return``); ``namespace``
    holds what the code names (symbol tuples, classes, ``call`` readers).
    """
    emitter = _Emitter()
    emitter.add(0, f"def {name}(data, pos):", "    size = len(data)")
    for target, field in fields:
        emitter.field(field, target, 4)
    emitter.add(4, *finish)
    scope: dict[str, Any] = {
        "UnsureError": UnsureError, "read_long": read_long, "read_raw": read_raw,
        "read_text": read_text, "new": tuple.__new__, **namespace,
    }  # fmt: skip
    source = "\n".join(emitter.lines)
    exec(compile(source, f"<oncelog.schemas.inline_reader:{name}>", "exec"), scope)
    reader: Callable[..., Any] = scope[name]
    return reader
