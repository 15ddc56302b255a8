"""Identity: canonical JSON, request hashes, operation ids and idempotency keys.

Everything here is deterministic and pure, so that every SDK in every language
derives the same identity from the same input (see ``tests/vectors/identity.json``).
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from json.encoder import encode_basestring
from typing import Any, Final

from oncelog.errors import CanonicalJsonError, InvalidArgumentError

# Derived once as uuid5(NAMESPACE_URL, "urn:oncelog:identity:v1") and frozen as a
# literal: changing it would change every operation id ever minted.
ONCELOG_NAMESPACE: Final = uuid.UUID("141dc2b1-e365-50cb-878e-1b5196f8fe46")

MAX_ID_BYTES: Final = 256
MAX_JSON_BYTES: Final = 1024 * 1024
MIN_LEASE_MS: Final = 1_000
MAX_LEASE_MS: Final = 24 * 60 * 60 * 1_000

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


# --- canonical JSON ------------------------------------------------------------


# json's own string encoder (the ensure_ascii=False flavour) escapes the quote,
# the backslash, the short forms of control characters (newline as backslash-n)
# and the others as backslash-u00XX, like JSON.stringify and RFC 8785, so that
# other SDKs can match it easily.
_quote: Final[Callable[[str], str]] = encode_basestring


def _encode(value: Any, out: list[str]) -> None:
    # bool before int: bool is an int subclass and must stay true/false.
    if value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, int):
        try:
            out.append(int.__repr__(value))
        except ValueError as exc:  # beyond sys.get_int_max_str_digits()
            raise CanonicalJsonError("integer too large for canonical JSON") from exc
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise CanonicalJsonError(f"{value!r} has no canonical JSON form")
        out.append(float.__repr__(value))
    elif isinstance(value, str):
        out.append(_quote(value))
    elif isinstance(value, Mapping):
        _encode_object(value, out)
    elif isinstance(value, list | tuple):
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _encode(item, out)
        out.append("]")
    else:
        raise CanonicalJsonError(f"type {type(value).__name__} has no canonical JSON form")


def _encode_object(value: Mapping[Any, Any], out: list[str]) -> None:
    for key in value:
        if not isinstance(key, str):
            raise CanonicalJsonError(f"object key {key!r} is not a string")
    out.append("{")
    for i, key in enumerate(sorted(value)):
        if i:
            out.append(",")
        out.append(_quote(key))
        out.append(":")
        _encode(value[key], out)
    out.append("}")


def canonical_json(value: Any) -> bytes:
    """Encode ``value`` as canonical JSON bytes.

    Keys sorted by code point, no whitespace, UTF-8, integers exact, floats in
    shortest round-trip form (``repr``). NaN, Infinity, non-string keys and
    types other than None/bool/int/float/str/Mapping/list/tuple raise
    :class:`CanonicalJsonError`.
    """
    out: list[str] = []
    try:
        _encode(value, out)
        return "".join(out).encode("utf-8")
    except RecursionError as exc:
        raise CanonicalJsonError("value is nested too deeply") from exc
    except UnicodeEncodeError as exc:  # lone surrogates cannot be UTF-8
        raise CanonicalJsonError("string is not valid Unicode") from exc


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


# --- validation ----------------------------------------------------------------


def validate_id(field: str, value: object) -> str:
    """Check an identifier (channel_id, key_name, tool_name, worker_id) and return it."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{field} must be a string, got {type(value).__name__}")
    if not value:
        raise InvalidArgumentError(f"{field} must not be empty")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(f"{field} is not valid Unicode") from exc
    if size > MAX_ID_BYTES:
        raise InvalidArgumentError(f"{field} is {size} UTF-8 bytes, at most {MAX_ID_BYTES}")
    if _CONTROL.search(value):
        raise InvalidArgumentError(f"{field} must not contain control characters")
    return value


def _validate_json(field: str, value: Any) -> bytes:
    data = canonical_json(value)
    if len(data) > MAX_JSON_BYTES:
        raise InvalidArgumentError(
            f"{field} is {len(data)} bytes of canonical JSON, at most {MAX_JSON_BYTES}"
        )
    return data


def validate_params(params: Mapping[str, Any]) -> bytes:
    """Check tool params (a JSON object of at most 1 MiB) and return their canonical bytes."""
    if not isinstance(params, Mapping):
        raise InvalidArgumentError(f"params must be a mapping, got {type(params).__name__}")
    return _validate_json("params", params)


def validate_result(result: Any) -> bytes:
    """Check a tool result (any JSON value of at most 1 MiB) and return its canonical bytes."""
    return _validate_json("result", result)


def _validate_int(field: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{field} must be an integer, got {type(value).__name__}")
    return value


def validate_lease_ms(lease_ms: object) -> int:
    """Check a lease in milliseconds: between 1 s and 24 h inclusive."""
    value = _validate_int("lease_ms", lease_ms)
    if not MIN_LEASE_MS <= value <= MAX_LEASE_MS:
        raise InvalidArgumentError(
            f"lease_ms={value} is outside [{MIN_LEASE_MS}, {MAX_LEASE_MS}] (1 s to 24 h)"
        )
    return value


def validate_retention_ms(retention_ms: object) -> int:
    """Check a result retention in milliseconds: strictly positive."""
    value = _validate_int("retention_ms", retention_ms)
    if value <= 0:
        raise InvalidArgumentError(f"retention_ms must be positive, got {value}")
    return value


def validate_dedup_fields(
    params: Mapping[str, Any], dedup_fields: Sequence[str] | None
) -> tuple[str, ...] | None:
    """Check that every dedup field is a string present in ``params``."""
    if dedup_fields is None:
        return None
    # A bare string is a sequence of characters: almost certainly a caller bug.
    if isinstance(dedup_fields, str) or not isinstance(dedup_fields, Sequence):
        raise InvalidArgumentError("dedup_fields must be a list of field names or None")
    for name in dedup_fields:
        if not isinstance(name, str):
            raise InvalidArgumentError(f"dedup_fields entry {name!r} is not a string")
        if name not in params:
            raise InvalidArgumentError(f"dedup_fields entry {name!r} is not in params")
    return tuple(dedup_fields)


# --- identity --------------------------------------------------------------------


def step_key_name(step: int) -> str:
    """The key name the SDK uses when the caller gives a step number."""
    value = _validate_int("step", step)
    if value < 0:
        raise InvalidArgumentError(f"step must not be negative, got {value}")
    return f"step-{value}"


def request_hash(
    tool_name: str, params: Mapping[str, Any], dedup_fields: Sequence[str] | None = None
) -> str:
    """SHA-256 hex of canonical ``{"tool": tool_name, "params": restricted params}``.

    Only the ``dedup_fields`` of ``params`` count (all of them when None), so
    volatile fields such as timestamps never cause a conflict.
    """
    validate_id("tool_name", tool_name)
    if not isinstance(params, Mapping):
        raise InvalidArgumentError(f"params must be a mapping, got {type(params).__name__}")
    fields = validate_dedup_fields(params, dedup_fields)
    counted = dict(params) if fields is None else {name: params[name] for name in fields}
    return sha256_hex(canonical_json({"tool": tool_name, "params": counted}))


@functools.lru_cache(maxsize=16_384)
def _uuid5_of(first: str, second: str) -> str:
    # Hash first: uuid5 then sees a fixed-size digest, whatever the input length.
    # Memoized: a claim and the completion after it derive the same ids (the
    # completion's operation id, the idempotency key of both answers), and
    # each derivation is ~15 us. The arguments are validated ids, so the
    # canonical JSON of the pair is the two quoted strings in brackets.
    pair = f"[{_quote(first)},{_quote(second)}]".encode()
    return uuid5_text(sha256_hex(pair))


_NAMESPACE_BYTES: Final = ONCELOG_NAMESPACE.bytes


def uuid5_text(name: str) -> str:
    """``str(uuid.uuid5(ONCELOG_NAMESPACE, name))`` without building a UUID (~5x cheaper)."""
    digest = bytearray(hashlib.sha1(_NAMESPACE_BYTES + name.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def operation_id(channel_id: str, key_name: str) -> str:
    """UUIDv5 naming one operation: the Kafka message key of all its records."""
    validate_id("channel_id", channel_id)
    validate_id("key_name", key_name)
    return _uuid5_of(channel_id, key_name)


def idempotency_key(operation_id: str, request_hash: str) -> str:
    """UUIDv5 over (operation_id, request_hash): what a tool passes downstream."""
    validate_id("operation_id", operation_id)
    validate_id("request_hash", request_hash)
    return _uuid5_of(operation_id, request_hash)
