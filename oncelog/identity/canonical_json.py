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


NESTING_LIMIT: Final = 1000
"""How deeply :func:`canonical_json` nests objects and arrays before it refuses a value."""


def _scalar(value: Any, out: list[str]) -> None:
    # Any leaf but a string (``_open`` writes those). bool before int: bool is an int
    # subclass and must stay true/false.
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
    else:
        raise CanonicalJsonError(f"type {type(value).__name__} has no canonical JSON form")


def _utf16_order(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


def _sorted_keys(value: Mapping[Any, Any]) -> list[Any]:
    keys = list(value)
    ascii_only = True
    for key in keys:
        if not isinstance(key, str):
            raise CanonicalJsonError(f"object key {key!r} is not a string")
        if ascii_only and not key.isascii():
            ascii_only = False
    # Code point order and UTF-16 order differ only past U+FFFF; ASCII keys sort as they are.
    keys.sort(key=None if ascii_only else _utf16_order)
    return keys


def _open(value: Any, out: list[str]) -> tuple[list[Any], Mapping[Any, Any] | None] | None:
    """Write what opens ``value``: a container's bracket (and returns its items: an
    object's sorted keys with the object, an array's items with None), or a scalar whole
    (and returns None)."""
    if isinstance(value, str):  # the common leaf first, before the ABC checks
        out.append(json_string(value))
        return None
    if isinstance(value, dict):
        out.append("{")
        return _sorted_keys(value), value
    if isinstance(value, list | tuple):
        out.append("[")
        return list(value), None
    if isinstance(value, Mapping):
        out.append("{")
        return _sorted_keys(value), value
    _scalar(value, out)
    return None


def _encode(value: Any, out: list[str], max_depth: int) -> bool:
    """Write ``value`` into ``out``; False (and stop) where it nests more than ``max_depth``
    objects and arrays deep (``{"a": [1]}`` is 2). A loop over a stack of the open
    containers, not recursion: any depth is answered, compiled or not."""
    items_of: list[list[Any]] = []  # each open container's items (an object's keys)
    objects: list[Mapping[Any, Any] | None] = []  # the open object, None for an array
    next_of: list[int] = []  # the index of each open container's next item
    current = value
    while True:
        opened = _open(current, out)
        if opened is not None:
            if len(items_of) >= max_depth:
                return False
            items_of.append(opened[0])
            objects.append(opened[1])
            next_of.append(0)
        # Close every container written to its end; then move to the next item.
        while items_of and next_of[-1] == len(items_of[-1]):
            out.append("]" if objects[-1] is None else "}")
            items_of.pop()
            objects.pop()
            next_of.pop()
        if not items_of:
            return True
        items, i, obj = items_of[-1], next_of[-1], objects[-1]
        next_of[-1] = i + 1
        if i:
            out.append(",")
        if obj is None:
            current = items[i]
        else:
            out.append(json_string(items[i]))
            out.append(":")
            current = obj[items[i]]


def canonical_json_within(value: Any, max_depth: int) -> bytes | None:
    """:func:`canonical_json` of ``value``, or None when it nests more than ``max_depth``
    objects and arrays deep (``{"a": [1]}`` is 2): one walk for the bytes and the depth."""
    out: list[str] = []
    if not _encode(value, out, max_depth):
        return None
    try:
        return "".join(out).encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates cannot be UTF-8
        raise CanonicalJsonError("string is not valid Unicode") from exc


def canonical_json(value: Any) -> bytes:
    """Encode ``value`` as RFC 8785 canonical JSON bytes (UTF-8).

    Keys sorted by UTF-16 code units, no whitespace, numbers as ECMAScript writes
    doubles (integers within ±(2**53 - 1)). NaN, Infinity, larger integers,
    non-string keys, lone surrogates, types other than
    None/bool/int/float/str/Mapping/list/tuple and nesting past
    :data:`NESTING_LIMIT` raise :class:`CanonicalJsonError`.
    """
    data = canonical_json_within(value, NESTING_LIMIT)
    if data is None:
        raise CanonicalJsonError("value is nested too deeply")
    return data


def sha256_hex(data: bytes) -> str:
    """Lower-case hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()
