"""Canonical JSON and SHA-256: the bytes every SDK hashes to name a request (docs/spec.md §2).

Identity v2 encodes values with RFC 8785, the JSON Canonicalization Scheme (JCS):
numbers are IEEE 754 doubles written as ECMAScript's ``Number.prototype.toString``
writes them (``1`` and ``1.0`` are both ``1``, ``1e-7`` and ``1e+21`` keep their
exponent), object keys are sorted by their UTF-16 code units, and strings are
escaped as ``JSON.stringify`` escapes them. Any language with a JCS library (or
the ~60 lines of ``tests/crosslang/identity.mjs``) derives the same bytes; see
``tests/vectors/identity.json``.

One choice beyond the RFC: an integer outside the doubles' exact range
(``|n| > 2**53 - 1``, I-JSON's interoperable range) is refused instead of rounded,
since two different ids must never hash the same. Send such numbers as strings.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Mapping
from json.encoder import encode_basestring
from typing import Any, Final

from oncelog.errors import CanonicalJsonError

MAX_SAFE_INTEGER: Final = 2**53 - 1
"""The largest integer every JSON reader holds exactly (``Number.MAX_SAFE_INTEGER``)."""

# json's own string encoder (the ensure_ascii=False flavour) escapes the quote, the
# backslash, \b \f \n \r \t in their short forms and the other control characters as
# lower-case \u00xx: exactly what JSON.stringify, and so RFC 8785, writes.
json_string: Final[Callable[[str], str]] = encode_basestring
"""A JSON string literal of a ``str``, quotes included, as canonical JSON writes it."""


def es_number(value: float) -> str:
    """``value`` as ECMAScript's ``Number.prototype.toString`` writes it (RFC 8785 §3.2.2.3).

    ``repr`` gives the shortest digits that round-trip, as ECMAScript does; only the
    layout (where the point goes, when the exponent appears) differs.
    """
    if value == 0:
        return "0"  # -0 too
    if value < 0:
        return "-" + es_number(-value)
    mantissa, _, exp = float.__repr__(value).partition("e")
    whole, _, fraction = mantissa.partition(".")
    padded = whole + fraction
    digits = padded.lstrip("0")
    # value = 0.<digits> * 10**point
    point = len(whole) + int(exp or 0) - (len(padded) - len(digits))
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= point <= 21:
        return digits + "0" * (point - k)
    if 0 < point <= 21:
        return f"{digits[:point]}.{digits[point:]}"
    if -6 < point <= 0:
        return "0." + "0" * -point + digits
    exponent = point - 1
    sign = "+" if exponent >= 0 else "-"
    head = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{head}e{sign}{abs(exponent)}"


def _encode(value: Any, out: list[str]) -> None:
    # bool before int: bool is an int subclass and must stay true/false.
    if value is None:
        out.append("null")
    elif value is True or value is False:
        out.append("true" if value else "false")
    elif isinstance(value, int):
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise CanonicalJsonError(
                f"integer {value if abs(value) < 10**30 else '(huge)'} is outside ±(2**53 - 1): "
                "not every JSON reader holds it exactly; send it as a string"
            )
        out.append(int.__repr__(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise CanonicalJsonError(f"{value!r} has no canonical JSON form")
        out.append(es_number(value))
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


def _utf16_order(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _encode_object(value: Mapping[Any, Any], out: list[str]) -> None:
    keys = list(value)
    for key in keys:
        if not isinstance(key, str):
            raise CanonicalJsonError(f"object key {key!r} is not a string")
    # Code point order and UTF-16 order differ only past U+FFFF; ASCII keys sort as they are.
    keys.sort(key=None if all(k.isascii() for k in keys) else _utf16_order)
    out.append("{")
    for i, key in enumerate(keys):
        if i:
            out.append(",")
        out.append(json_string(key))
        out.append(":")
        _encode(value[key], out)
    out.append("}")


def canonical_json(value: Any) -> bytes:
    """Encode ``value`` as RFC 8785 canonical JSON bytes (UTF-8).

    Keys sorted by UTF-16 code units, no whitespace, numbers as ECMAScript writes
    doubles (integers within ±(2**53 - 1)). NaN, Infinity, larger integers,
    non-string keys, lone surrogates and types other than
    None/bool/int/float/str/Mapping/list/tuple raise :class:`CanonicalJsonError`.
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
