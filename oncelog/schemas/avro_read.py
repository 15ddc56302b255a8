"""The Avro primitives a generated reader calls for what it does not read inline.

A generated reader (:mod:`oncelog.schemas.inline_reader`) reads every varint and every
string or blob of a one-byte length in line; a longer one (a 64-character hash is one)
comes here. Compiled with the readers (:mod:`oncelog._compiled`), so that call is a C
call, not an interpreted frame.
"""

from __future__ import annotations


class UnsureError(Exception):
    """The bytes are not plainly valid for the schema: let fastavro judge."""


def read_long(data: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint at ``pos``: (value, position after)."""
    n = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
        if shift > 63:  # over 10 bytes: fastavro would wrap, stay out of it
            raise UnsureError
    if n >> 64:  # the 10th byte carried bits beyond 64
        raise UnsureError
    return (n >> 1) ^ -(n & 1), pos


def read_raw(data: bytes, pos: int) -> tuple[bytes, int]:
    """Avro ``bytes`` at ``pos``."""
    size, pos = read_long(data, pos)
    end = pos + size
    if size < 0 or end > len(data):
        raise UnsureError
    return data[pos:end], end


def read_text(data: bytes, pos: int) -> tuple[str, int]:
    """Avro ``string`` at ``pos`` (strict UTF-8, as fastavro decodes it)."""
    raw, pos = read_raw(data, pos)
    return raw.decode(), pos
