"""Validation of what names an operation and what it carries: ids, JSON sizes, leases.

The SDK checks each argument once with these, at its public call
(:mod:`oncelog.producer.calls`), before anything is produced; the projector checks
every request it folds against the same rules and limits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from oncelog.errors import InvalidArgumentError
from oncelog.identity.canonical_json import canonical_json

MAX_ID_BYTES: Final = 256
MAX_JSON_BYTES: Final = 1024 * 1024
MIN_LEASE_MS: Final = 1_000
MAX_LEASE_MS: Final = 24 * 60 * 60 * 1_000

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_ASCII_NUMBER = re.compile(r"[0-9]+")
# Whole path segments that URL parsers (httpx, every browser, even percent-encoded) resolve.
_DOT_SEGMENTS: Final = frozenset({".", ".."})

# Ids that passed, so that an id seen again is not checked again: a claim and its
# completion name the same channel and key, a client reuses its tool names, and the
# referee sees the same tool and worker ids in claim after claim (a check costs more
# than the lookup; the SDK checks each argument once, three ids a claim). Only ids
# that passed go in; bounded by starting over when full.
_PASSED: dict[str, None] = {}
PASSED_KEPT: Final = 65_536


def validate_id(field: str, value: object) -> str:
    """Check an identifier (channel_id, key_name, tool_name, worker_id) and return it."""
    if value.__class__ is str and value in _PASSED:
        return value
    checked = _checked_id(field, value)
    if len(_PASSED) >= PASSED_KEPT:
        _PASSED.clear()
    _PASSED[checked] = None
    return checked


def validate_unique_id(field: str, value: object) -> str:
    """Check an identifier that never repeats (a request id) by the same rules, without
    remembering it: it would only push out the ids that do repeat."""
    return _checked_id(field, value)


def _checked_id(field: str, value: object) -> str:
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


def is_ascii_number(text: str) -> bool:
    """Whether ``text`` is ASCII digits only (``"42"``): how every query reads a step number
    (a step-or-key) and an offset (an as-of or a bound).

    Such a key name reads as ``step-<N>`` on every query path (the CLI, ``/v1/status``,
    the page), so it could never be asked back: claims refuse it.
    """
    return _ASCII_NUMBER.fullmatch(text) is not None


def path_unsafe(value: str) -> str | None:
    """Why ``value`` cannot travel as one URL path segment, or None when it can.

    Ids travel as path segments (``/v1/status/{channel}/{key}``, the page's
    ``/ui/runs/{channel}``): a ``/`` inside one is decoded before routing, or refused, by
    the server and by proxies in front of it, even sent as ``%2F``; a segment ``.`` or
    ``..`` is resolved away by clients and browsers, even percent-encoded.
    """
    if "/" in value:
        return "contains '/'"
    if value in _DOT_SEGMENTS:
        return "is a URL dot segment"
    return None


def validate_claimed_names(channel_id: str, key_name: str) -> None:
    """Refuse, at claim, a channel id or key name that a query could not name back
    (docs/spec.md §2): one that is :func:`path_unsafe`, or a key name of digits only (it
    reads as a step).

    The ids must have passed :func:`validate_id` already. Only claims check this: the
    referee folds every id that :func:`validate_id` passes, so that a log written before
    this rule still folds as it did.
    """
    for field, value in (("channel_id", channel_id), ("key_name", key_name)):
        why = path_unsafe(value)
        if why is not None:
            raise InvalidArgumentError(
                f"{field} {value!r} {why}, which no query path can carry (ids travel as URL "
                "path segments): choose another name, e.g. with ':' as a separator"
            )
    if is_ascii_number(key_name):
        step = int(key_name)
        raise InvalidArgumentError(
            f"key_name {key_name!r} is only digits, which every query reads as step {step} "
            f"(key 'step-{step}'): pass step={step} instead, or a key name with another character"
        )


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


def validate_int(field: str, value: object) -> int:
    """Check that ``value`` is an int (a bool is not) and return it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{field} must be an integer, got {type(value).__name__}")
    return value


def validate_lease_ms(lease_ms: object) -> int:
    """Check a lease in milliseconds: between 1 s and 24 h inclusive."""
    value = validate_int("lease_ms", lease_ms)
    if not MIN_LEASE_MS <= value <= MAX_LEASE_MS:
        raise InvalidArgumentError(
            f"lease_ms={value} is outside [{MIN_LEASE_MS}, {MAX_LEASE_MS}] (1 s to 24 h)"
        )
    return value


def validate_retention_ms(retention_ms: object) -> int:
    """Check a result retention in milliseconds: strictly positive."""
    value = validate_int("retention_ms", retention_ms)
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
