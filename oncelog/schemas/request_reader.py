"""A hand-written reader of ``Request`` bodies written with the current schema.

fastavro's ``schemaless_reader`` spends most of its ~5 us on per-call setup for
a record this small; the projector decodes one request per Kafka message, so
this module reads the current ``request.avsc`` layout directly (about 1.5 us).

It is an accelerator, not a second source of truth: :func:`read_request`
returns ``None`` for anything it is not sure about (truncation, a negative
length, a boolean byte other than 0/1, an index out of range, invalid UTF-8,
an over-long varint, trailing bytes) and the codec then takes the fastavro
path, which gives the exact result (or ``CodecError``) it always gave.
``tests/schemas/test_request_reader.py`` checks it against fastavro on valid
records and on corrupted bytes. Records of older writer schemas never get
here: they carry another fingerprint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeVar

from oncelog.schemas.models import (
    Body,
    Cancel,
    Claim,
    Complete,
    Effect,
    Fail,
    Get,
    Heartbeat,
    Release,
    Request,
    Sweep,
)

HEADER_LEN: Final = 10

CANONICAL_FORM: Final = (
    '{"name":"dev.oncelog.Request","type":"record","fields":['
    '{"name":"request_id","type":"string"},{"name":"operation_id","type":"string"},'
    '{"name":"channel_id","type":"string"},{"name":"key_name","type":"string"},'
    '{"name":"claim_token","type":["null","string"]},{"name":"body","type":['
    '{"name":"dev.oncelog.Claim","type":"record","fields":['
    '{"name":"tool_name","type":"string"},{"name":"params","type":"bytes"},'
    '{"name":"request_hash","type":"string"},{"name":"lease_ms","type":"long"},'
    '{"name":"retention_ms","type":"long"},{"name":"effect","type":'
    '{"name":"dev.oncelog.Effect","type":"enum","symbols":["pure","external"]}},'
    '{"name":"worker_id","type":"string"}]},'
    '{"name":"dev.oncelog.Heartbeat","type":"record","fields":['
    '{"name":"lease_ms","type":["null","long"]}]},'
    '{"name":"dev.oncelog.Complete","type":"record","fields":['
    '{"name":"result","type":"bytes"}]},'
    '{"name":"dev.oncelog.Fail","type":"record","fields":['
    '{"name":"error","type":"string"},{"name":"retryable","type":"boolean"}]},'
    '{"name":"dev.oncelog.Release","type":"record","fields":[]},'
    '{"name":"dev.oncelog.Cancel","type":"record","fields":['
    '{"name":"reason","type":["null","string"]}]},'
    '{"name":"dev.oncelog.Sweep","type":"record","fields":[]},'
    '{"name":"dev.oncelog.Get","type":"record","fields":[]}]},'
    '{"name":"reply_partition","type":["null","int"]}]}'
)
"""The parsing canonical form this reader implements; the codec enables it only
when the current ``request.avsc`` has exactly this form."""

_EFFECTS: Final = (Effect.PURE, Effect.EXTERNAL)
# Bodies without data are immutable values: share one instance of each.
_HEARTBEAT: Final = Heartbeat()
_RELEASE: Final = Release()
_CANCEL: Final = Cancel()
_SWEEP: Final = Sweep()
_GET: Final = Get()


T = TypeVar("T")


class _UnsureError(Exception):
    """The bytes are not a plainly valid current-schema request: let fastavro judge."""


def _long_tail(data: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint of two or more bytes at ``pos``: (value, position after)."""
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
            raise _UnsureError
    if n >> 64:  # the 10th byte carried bits beyond 64
        raise _UnsureError
    return (n >> 1) ^ -(n & 1), pos


def _long(data: bytes, pos: int) -> tuple[int, int]:
    b = data[pos]
    if b < 0x80:  # one byte: every length and index of a small record
        return (b >> 1) ^ -(b & 1), pos + 1
    return _long_tail(data, pos)


def _raw(data: bytes, pos: int) -> tuple[bytes, int]:
    """Avro ``bytes`` at ``pos``."""
    b = data[pos]
    if b < 0x80 and not b & 1:
        pos += 1
        end = pos + (b >> 1)
    else:
        size, pos = _long(data, pos)
        if size < 0:
            raise _UnsureError
        end = pos + size
    if end > len(data):
        raise _UnsureError
    return data[pos:end], end


def _text(data: bytes, pos: int) -> tuple[str, int]:
    """Avro ``string`` at ``pos`` (strict UTF-8, as fastavro decodes it)."""
    # _raw inlined: four to six strings per request make the call overhead count.
    b = data[pos]
    if b < 0x80 and not b & 1:
        pos += 1
        end = pos + (b >> 1)
    else:
        size, pos = _long(data, pos)
        if size < 0:
            raise _UnsureError
        end = pos + size
    if end > len(data):
        raise _UnsureError
    return data[pos:end].decode(), end


def _optional(
    read: Callable[[bytes, int], tuple[T, int]], data: bytes, pos: int
) -> tuple[T | None, int]:
    """``["null", X]`` at ``pos``, X read by ``read``."""
    branch = data[pos]
    if branch == 0:
        return None, pos + 1
    if branch != 2:
        raise _UnsureError
    return read(data, pos + 1)


def _optional_text(data: bytes, pos: int) -> tuple[str | None, int]:
    """``["null", "string"]`` at ``pos``."""
    return _optional(_text, data, pos)


def _int(data: bytes, pos: int) -> tuple[int, int]:
    """Avro ``int`` at ``pos``; a value beyond 32 bits is fastavro's to judge."""
    n, pos = _long(data, pos)
    if not -(1 << 31) <= n < 1 << 31:
        raise _UnsureError
    return n, pos


def _optional_int(data: bytes, pos: int) -> tuple[int | None, int]:
    """``["null", "int"]`` at ``pos``."""
    return _optional(_int, data, pos)


def _claim(data: bytes, pos: int) -> tuple[Body, int]:
    tool_name, pos = _text(data, pos)
    params, pos = _raw(data, pos)
    request_hash, pos = _text(data, pos)
    lease_ms, pos = _long(data, pos)
    retention_ms, pos = _long(data, pos)
    effect = data[pos]
    if effect > 2 or effect & 1:
        raise _UnsureError
    worker_id, pos = _text(data, pos + 1)
    body = Claim(
        tool_name, params, request_hash, lease_ms, retention_ms, _EFFECTS[effect >> 1], worker_id
    )
    return body, pos


def _heartbeat(data: bytes, pos: int) -> tuple[Body, int]:
    branch = data[pos]
    if branch == 0:
        return _HEARTBEAT, pos + 1
    if branch != 2:
        raise _UnsureError
    lease_ms, pos = _long(data, pos + 1)
    return Heartbeat(lease_ms), pos


def _complete(data: bytes, pos: int) -> tuple[Body, int]:
    result, pos = _raw(data, pos)
    return Complete(result), pos


def _fail(data: bytes, pos: int) -> tuple[Body, int]:
    error, pos = _text(data, pos)
    retryable = data[pos]
    if retryable > 1:
        raise _UnsureError
    return Fail(error, retryable == 1), pos + 1


def _cancel(data: bytes, pos: int) -> tuple[Body, int]:
    reason, pos = _optional_text(data, pos)
    return (_CANCEL if reason is None else Cancel(reason)), pos


def _release(data: bytes, pos: int) -> tuple[Body, int]:
    return _RELEASE, pos


def _sweep(data: bytes, pos: int) -> tuple[Body, int]:
    return _SWEEP, pos


def _get(data: bytes, pos: int) -> tuple[Body, int]:
    return _GET, pos


# Indexed by the zig-zag encoded union branch byte (2 * branch).
_BODY_READERS: Final = (_claim, _heartbeat, _complete, _fail, _release, _cancel, _sweep, _get)


def _read(data: bytes) -> Request:
    request_id, pos = _text(data, HEADER_LEN)
    operation_id, pos = _text(data, pos)
    channel_id, pos = _text(data, pos)
    key_name, pos = _text(data, pos)
    claim_token, pos = _optional_text(data, pos)
    branch = data[pos]
    if branch & 1 or branch >= 2 * len(_BODY_READERS):
        raise _UnsureError
    body, pos = _BODY_READERS[branch >> 1](data, pos + 1)
    reply_partition, pos = _optional_int(data, pos)
    if pos != len(data):
        raise _UnsureError
    # tuple.__new__ skips the NamedTuple's generated Python __new__ (every field is here)
    return tuple.__new__(
        Request,
        (request_id, operation_id, channel_id, key_name, claim_token, body, reply_partition),
    )


def read_request(data: bytes) -> Request | None:
    """The request in ``data`` (header included, not checked), or ``None`` if unsure.

    The caller has matched the magic and the fingerprint of the current schema.
    ``None`` means: decode with fastavro, which knows the exact verdict.
    """
    try:
        return _read(data)
    except Exception:  # IndexError at a truncation, UnicodeDecodeError, _UnsureError, ...
        return None


# The primitives, for the other hand-written reader (oncelog.schemas.decision_reader).
UnsureError = _UnsureError
read_long = _long
read_raw = _raw
read_text = _text
read_optional = _optional
read_optional_text = _optional_text
