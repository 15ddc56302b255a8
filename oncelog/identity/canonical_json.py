"""Canonical JSON and SHA-256: the bytes every SDK hashes to name a request (spec §2).

Deterministic and pure, so that every SDK in every language derives the same
bytes from the same value (see ``tests/vectors/identity.json``).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from json.encoder import encode_basestring
from typing import Any, Final

from oncelog.errors import CanonicalJsonError

# json's own string encoder (the ensure_ascii=False flavour) escapes the quote,
# the backslash, the short forms of control characters (newline as backslash-n)
# and the others as backslash-u00XX, like JSON.stringify and RFC 8785, so that
# other SDKs can match it easily.
json_string: Final[Callable[[str], str]] = encode_basestring
"""A JSON string literal of a ``str``, quotes included, as canonical JSON writes it."""


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
        out.append(json_string(value))
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
        out.append(json_string(key))
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
