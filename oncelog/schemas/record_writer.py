"""Avro body writers generated from a parsed ``.avsc`` schema at import.

fastavro's ``schemaless_writer`` spends most of its time per record here on
per-call setup and the dict form of the model (``convert``; docs/performance.md).
Every client call writes a ``Request``, and the
projector writes the same :class:`ExecutionState` up to three times per request:
inside the ``Decision``, inside the ``ExecutionSnapshot`` and as the DuckDB
state blob. :func:`compile_writer` turns a schema into the source of one
function per record that writes the model's fields straight from the model (by
field name; a field the model derives is read from its property), and since a
record's body is the concatenation of its fields' bodies, ``nested`` splices a
state body written once (:class:`StateBodies`) into all three.

Encoded longs, strings and retry-memory items are memoized by value
(:mod:`oncelog.schemas.byte_budget`). ``tests/schemas/test_record_writer.py`` and
``test_request_reader.py`` check the bytes against fastavro's.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any, Final

from oncelog.schemas.byte_budget import MAX_AGE_S, BytesMemo, entry_bytes
from oncelog.schemas.emitter import Emitter
from oncelog.schemas.inline_reader import UnsupportedError
from oncelog.schemas.layout import STATE_SCHEMA, model_fields, model_of, named_types
from oncelog.schemas.models import ExecutionState

# --- primitives --------------------------------------------------------------------

_NULL: Final = b"\x00"  # union branch 0 ("null"); also false, and the end of an array
_SOME: Final = b"\x02"  # union branch 1, zig-zag encoded
_FALSE: Final = b"\x00"
_TRUE: Final = b"\x01"
_BYTE: Final = tuple(bytes((z,)) for z in range(0x80))
_LONG_MIN: Final = -(1 << 63)
_LONG_MAX: Final = (1 << 63) - 1
# The continuation bits of a k-byte varint: 0x80 in every byte but the last.
_CONTINUE: Final = tuple(int.from_bytes(b"\x80" * (k - 1), "little") for k in range(11))
# Encoded longs by value. The same millisecond timestamps recur across a state's
# fields (updated_at_ms, last_heartbeat_ms), its versions (claimed_at_ms) and
# the records of one request (log_time_ms), and a lookup is cheaper than the
# encoding.
_LONGS: Final[BytesMemo[int]] = BytesMemo(4 << 20)
# Encoded strings by value, for the same reason: every version of a state repeats
# its ids, hashes, token fingerprints and the request ids of ``recent``. (A str hashes once.)
_TEXTS: Final[BytesMemo[str]] = BytesMemo(16 << 20)
# Encoded array items (records) by value: each new state version carries the
# previous version's retry memory (``recent``) plus one item.
_ITEMS: Final[BytesMemo[Any]] = BytesMemo(16 << 20)


def _varint(z: int) -> bytes:
    """The varint bytes of a zig-zag value of two or more bytes."""
    if z < 0x4000:  # lengths of hashes and params, small counters
        return bytes((z & 0x7F | 0x80, z >> 7))
    size = (z.bit_length() + 6) // 7
    # Spread the 7-bit groups over whole bytes with a few big-int operations,
    # cheaper than a Python loop per byte for 6-byte millisecond timestamps.
    spread = (
        (z & 0x7F)
        | (z << 1 & 0x7F00)
        | (z << 2 & 0x7F_0000)
        | (z << 3 & 0x7F00_0000)
        | (z << 4 & 0x7F_0000_0000)
        | (z << 5 & 0x7F00_0000_0000)
    )
    if size > 6:
        spread |= (
            (z << 6 & 0x7F_0000_0000_0000)
            | (z << 7 & 0x7F00_0000_0000_0000)
            | (z << 8 & 0x7F_0000_0000_0000_0000)
            | (z << 9 & 0x7F00_0000_0000_0000_0000)
        )
    return (spread | _CONTINUE[size]).to_bytes(size, "little")


def _encode_long(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    if 0 <= z < 0x80:
        return _BYTE[z]
    if not _LONG_MIN <= n <= _LONG_MAX:
        # As fastavro's compiled writer, rather than writing bytes no reader accepts.
        raise OverflowError(f"{n} does not fit an Avro long")
    return _varint(z)


def write_long(n: int) -> bytes:
    """Avro ``long`` (and ``int``): the zig-zag varint of ``n``.

    Out of the signed 64-bit range it raises ``OverflowError``, as fastavro does.
    """
    data = _LONGS.get(n)
    if data is None:
        data = _encode_long(n)
        _LONGS.put(n, data)
    return data


def _blob(data: bytes) -> bytes:
    """Avro ``bytes``: length, then the data."""
    size = len(data)
    return (_BYTE[size << 1] if size < 0x40 else _varint(size << 1)) + data


def _text(text: str) -> bytes:
    """Avro ``string``: strict UTF-8, length-prefixed; memoized like the longs."""
    data = _TEXTS.get(text)
    if data is None:
        data = _blob(text.encode())
        _TEXTS.put(text, data)
    return data


# --- the generator -----------------------------------------------------------------


def _array(items: Any, write_item: Callable[[Any], bytes]) -> bytes:
    """An array as fastavro writes it: one block (count, items), then 0; empty is 0."""
    if not items:
        return _NULL
    parts = [write_long(len(items))]
    parts.extend(write_item(item) for item in items)
    parts.append(_NULL)
    return b"".join(parts)


def _memoized(write: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """``write`` of a record, its bytes memoized by value (the record is a hashable model)."""
    known = _ITEMS.get

    def write_item(item: Any) -> bytes:
        data = known(item)
        if data is None:
            data = write(item)
            _ITEMS.put(item, data)
        return data

    return write_item


class _Emitter(Emitter):
    """Generates one function per record of a schema; names what the code uses."""

    def __init__(
        self,
        named: dict[str, Any],
        nested: Mapping[str, Callable[[Any], bytes]],
        unmemoized: Collection[tuple[str, str]],
    ) -> None:
        scope: dict[str, Any] = {
            "NULL": _NULL,
            "SOME": _SOME,
            "TRUE": _TRUE,
            "FALSE": _FALSE,
            "long": write_long,
            "text": _text,
            "blob": _blob,
            "array": _array,
            "memoized": _memoized,
            "pack_f": struct.Struct("<f").pack,
            "pack_d": struct.Struct("<d").pack,
        }
        super().__init__(named, scope)
        self.nested = nested
        self.unmemoized = unmemoized
        self.writers: dict[str, str] = {}  # record name -> its function's name

    def expr(self, t: Any, v: str, where: tuple[str, str] = ("", "")) -> str:
        """An expression of the body of ``v`` (a local name), of type ``t``."""
        t = self.resolved(t)
        if isinstance(t, list):
            return self._union(t, v)
        if isinstance(t, dict):
            if "logicalType" in t:
                raise UnsupportedError(t["logicalType"])
            kind = t["type"]
            if kind == "record":
                return f"{self.record(t)}({v})"
            if kind == "enum":
                return f"{self._enum(t)}[{v}]"
            if kind == "array":
                return f"array({v}, {self._items(t['items'])})"
            t = kind
        simple = {
            "string": f"blob({v}.encode())" if where in self.unmemoized else f"text({v})",
            "bytes": f"blob({v})",
            "long": f"long({v})",
            "int": f"long({v})",
            "boolean": f"(TRUE if {v} else FALSE)",
            "null": 'b""',
            "float": f"pack_f({v})",
            "double": f"pack_d({v})",
        }
        if not isinstance(t, str) or t not in simple:
            raise UnsupportedError(repr(t))
        return simple[t]

    def _enum(self, t: Any) -> str:
        """Symbol -> index varint; keyed by value so members (``StrEnum``) hash the same."""
        model_of(t["name"])  # checked against the model by oncelog.schemas.layout
        return self.bind("E_", {s: write_long(i) for i, s in enumerate(t["symbols"])})

    def _items(self, t: Any) -> str:
        if isinstance(t, str) and t in self.named:
            t = self.named[t]
        if isinstance(t, dict) and t["type"] == "record" and t["name"] not in self.nested:
            return f"memoized({self.record(t)})"
        item = self.fresh("item")
        return f"(lambda {item}: {self.expr(t, item)})"

    def _union(self, branches: list[Any], v: str) -> str:
        if len(branches) == 2 and branches[0] == "null":  # ["null", X]: the optional field
            return f"(NULL if {v} is None else SOME + {self.expr(branches[1], v)})"
        records = [self.named[b] if isinstance(b, str) and b in self.named else b for b in branches]
        if not all(isinstance(r, dict) and r["type"] == "record" for r in records):
            raise UnsupportedError(f"union {branches}")
        # A union of records (a request's body): the branch index, then the record.
        table = {
            model_of(r["name"]): (write_long(i), self.scope[self.record(r)])
            for i, r in enumerate(records)
        }
        branch = self.bind("U_", {cls: _branch(*pair) for cls, pair in table.items()})
        return f"{branch}[type({v})]({v})"

    def record(self, t: Any) -> str:
        """The name of the function writing the record ``t`` (generated on first use)."""
        name = t["name"]
        if name in self.nested:
            return self.bind("NESTED_", self.nested[name])
        known = self.writers.get(name)
        if known is not None:
            return known
        cls = model_of(name)
        function = self.writers[name] = self.fresh(f"write_{cls.__name__}_")
        fields = [f["name"] for f in t["fields"]]
        local = {field: self.fresh("f") for field in fields}
        parts = [self.expr(f["type"], local[f["name"]], (name, f["name"])) for f in t["fields"]]
        lines = [f"def {function}(o):"]
        if fields and tuple(fields) == model_fields(cls) and hasattr(cls, "_fields"):
            lines.append(f"    ({', '.join(local.values())},) = o")  # a NamedTuple in order
        else:  # by attribute: a dataclass, another order, or a field the model derives
            lines.extend(f"    {local[field]} = o.{field}" for field in fields)
        body = "".join(f"{part}, " for part in parts)
        lines.append(f"    return b''.join(({body}))" if parts else "    return b''")
        self.lines.extend(lines)
        self._define(function)
        return function

    def _define(self, function: str) -> None:
        source = "\n".join(self.lines)
        self.lines = []
        code = compile(source, f"<oncelog.schemas.record_writer:{function}>", "exec")
        exec(code, self.scope)


def _branch(index: bytes, write: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    """The writer of one branch of a union of records: its index, then the record."""
    return lambda body: index + write(body)


def compile_writer(
    schema: Any,
    nested: Mapping[str, Callable[[Any], bytes]] | None = None,
    unmemoized: Collection[tuple[str, str]] = (),
) -> Callable[[Any], bytes]:
    """``write(model) -> bytes``: the schemaless Avro body of a model of the record ``schema``.

    ``nested`` writes the named records inside it instead (the state, from
    :class:`StateBodies`); ``unmemoized`` names ``(record, field)`` strings that
    are unique per record (a request id), whose bytes the memo would hold for
    nothing. Raises :class:`UnsupportedError` for a type it does not write.
    """
    emitter = _Emitter(named_types(schema), nested or {}, unmemoized)
    writer: Callable[[Any], bytes] = emitter.scope[emitter.record(schema)]
    return writer


state_body: Final[Callable[[ExecutionState], bytes]] = compile_writer(STATE_SCHEMA)
"""The schemaless Avro body of a state (``dev.oncelog.ExecutionState.avsc``)."""


# --- one body per state ------------------------------------------------------------


class StateBodies:
    """The bodies of recently written states, by identity, so each is written once.

    The projector writes a state in a decision, then in its snapshot, then as
    the DuckDB blob (on the committer thread), and unchanged decisions of
    later batches carry the same cached state object again. Entries hold the
    state itself, so its ``id`` cannot be reused while the entry lives, and
    states are immutable, so a body never goes stale. Two generations bound
    the memory by bytes (each at most half of ``budget_bytes``): when the young
    one is full it becomes the old one. Shared by threads: every dict call is
    atomic, and a lost race only costs a rewrite or a misjudged count.
    """

    def __init__(
        self,
        budget_bytes: int = 32 << 20,
        max_age_s: float = MAX_AGE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._generation_bytes = budget_bytes // 2
        # A generation also ends after half of max_age_s (see byte_budget): the
        # entries hold their states alive, so a light load must not keep an hour's.
        self._generation_s = max_age_s / 2
        self._clock = clock
        self._young_since = clock()
        self._young: dict[int, tuple[ExecutionState, bytes]] = {}
        self._young_bytes = 0
        self._old: dict[int, tuple[ExecutionState, bytes]] = {}

    def body(self, state: ExecutionState) -> bytes:
        """The body of ``state``, written at most once while it stays recent."""
        key = id(state)
        entry = self._young.get(key)
        if entry is not None and entry[0] is state:
            return entry[1]
        entry = self._old.get(key)
        if entry is None or entry[0] is not state:
            entry = (state, state_body(state))
        size = entry_bytes(entry[1])
        now = self._clock()
        if (
            self._young_bytes + size > self._generation_bytes
            or now - self._young_since > self._generation_s
        ):
            self._old, self._young, self._young_bytes = self._young, {}, 0
            self._young_since = now
        self._young[key] = entry  # promoted from the old generation, or new
        self._young_bytes += size
        return entry[1]

    def clear(self) -> None:
        """Forget every body (benchmarks start cold with this)."""
        self._young, self._old, self._young_bytes = {}, {}, 0
