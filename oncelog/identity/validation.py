"""Validation of what names an operation and what it carries: ids, JSON sizes, leases.

The SDK checks each argument once with these, at its public call
(:mod:`oncelog.producer.calls`), before anything is produced; the projector checks
every request it folds against the same rules and limits. The HTTP write API builds
its requests with the same calls, so its checks are these too.

The documented ranges (docs/spec.md §2, "Limits"): a lease of 1 s to 24 h, a result
retention of 1 ms to 100 years, a receipt's lifetime of 1 ms to 100 years, a step of 0
to 2**53 - 1, a client's waits of at most 300 s (:class:`~oncelog.producer.dispatch.Timeouts`)
and params and results of at most 1 MiB of canonical JSON nested at most
:data:`MAX_JSON_DEPTH` deep. The SDK checks the seconds ranges and the depth; the fold
keeps its own older rules (:func:`validate_lease_ms`, :func:`validate_retention_ms`),
so that a log folds as it always did.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from oncelog.errors import InvalidArgumentError
from oncelog.identity.canonical_json import canonical_json_within

MAX_ID_BYTES: Final = 256
MAX_JSON_BYTES: Final = 1024 * 1024
MIN_LEASE_MS: Final = 1_000
MAX_LEASE_MS: Final = 24 * 60 * 60 * 1_000
MAX_RETENTION_MS: Final = 100 * 365 * 24 * 60 * 60 * 1_000
"""The longest result retention (and receipt lifetime) a caller may ask: 100 years."""
MAX_STEP: Final = 2**53 - 1
"""The largest step number: every JSON reader holds it exactly."""
MAX_JSON_DEPTH: Final = 100
"""How deeply params and a result may nest objects and arrays (``{"a": [1]}`` is 2)."""

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
    if value.isascii():
        # ASCII has no control character outside \x00-\x1f and \x7f, and those are
        # exactly what isprintable refuses: no regex, and a byte per character.
        size, control = len(value), not value.isprintable()
    else:
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise InvalidArgumentError(f"{field} is not valid Unicode") from exc
        control = _CONTROL.search(value) is not None
    if size > MAX_ID_BYTES:
        raise InvalidArgumentError(f"{field} is {size} UTF-8 bytes, at most {MAX_ID_BYTES}")
    if control:
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
    data = canonical_json_within(value, MAX_JSON_DEPTH)
    if data is None:
        raise InvalidArgumentError(
            f"{field} nests objects and arrays more than {MAX_JSON_DEPTH} deep"
        )
    if len(data) > MAX_JSON_BYTES:
        raise InvalidArgumentError(
            f"{field} is {len(data)} bytes of canonical JSON, at most {MAX_JSON_BYTES}"
        )
    return data


def validate_params(params: Mapping[str, Any]) -> bytes:
    """Check tool params (a JSON object of at most 1 MiB) and return their canonical bytes."""
    # A dict first: the ABC's isinstance check runs an interpreted frame.
    if type(params) is not dict and not isinstance(params, Mapping):
        raise InvalidArgumentError(f"params must be a mapping, got {type(params).__name__}")
    return _validate_json("params", params)


def validate_result(result: Any) -> bytes:
    """Check a tool result (any JSON value of at most 1 MiB) and return its canonical bytes."""
    return _validate_json("result", result)


def validate_text(field: str, value: object, max_bytes: int, what: str) -> str:
    """Check a string of valid Unicode of at most ``max_bytes`` UTF-8 bytes (``what`` says
    the limit to a person: "1 MiB")."""
    if isinstance(value, str):
        try:
            if len(value.encode("utf-8")) <= max_bytes:
                return value
        except UnicodeEncodeError as exc:  # a lone surrogate, from JSON's \ud800
            raise InvalidArgumentError(f"{field} is not valid Unicode") from exc
    raise InvalidArgumentError(f"{field} must be a string of at most {what}")


def validate_int(field: str, value: object) -> int:
    """Check that ``value`` is an int (a bool is not) and return it."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{field} must be an integer, got {type(value).__name__}")
    return value


def validate_number(field: str, value: object, low: float, high: float) -> float:
    """Check a finite int or float (a bool is not) within ``[low, high]`` and return it."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgumentError(f"{field} must be a number, got {type(value).__name__}")
    if not (math.isfinite(value) and low <= value <= high):
        raise InvalidArgumentError(f"{field}={value!r} is outside [{low:g}, {high:g}]")
    return value


def seconds_to_ms(field: str, seconds: object, low_ms: int, high_ms: int) -> int:
    """Seconds as whole milliseconds, checked within ``[low_ms, high_ms]`` before anything is
    computed from them (``inf``, ``nan`` or ``1e20`` would not fit a record's long)."""
    value = validate_number(field, seconds, low_ms / 1000, high_ms / 1000)
    return min(max(round(value * 1000), low_ms), high_ms)


def lease_seconds_to_ms(lease_seconds: object) -> int:
    """A lease in seconds as milliseconds: 1 s to 24 h inclusive."""
    return seconds_to_ms("lease_seconds", lease_seconds, MIN_LEASE_MS, MAX_LEASE_MS)


def retention_seconds_to_ms(retention_seconds: object) -> int:
    """A result retention in seconds as milliseconds: 1 ms to 100 years inclusive."""
    return seconds_to_ms("retention_seconds", retention_seconds, 1, MAX_RETENTION_MS)


def validate_step(step: object) -> int:
    """Check a step number: an int from 0 to :data:`MAX_STEP`."""
    value = validate_int("step", step)
    if not 0 <= value <= MAX_STEP:
        raise InvalidArgumentError(f"step={value} is outside [0, {MAX_STEP}]")
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
    params: Mapping[str, Any], dedup_fields: object
) -> tuple[str, ...] | None:
    """Check that every dedup field is a string present in ``params``.

    ``dedup_fields`` is typed ``object``: whatever a caller passed is checked here (a
    compiled ``Sequence[str]`` would refuse a non-string entry with a bare TypeError).
    """
    if dedup_fields is None:
        return None
    # A bare string is a sequence of characters: almost certainly a caller bug.
    if isinstance(dedup_fields, str) or not isinstance(dedup_fields, Sequence):
        raise InvalidArgumentError("dedup_fields must be a list of field names or None")
    names: list[str] = []
    for name in dedup_fields:
        if not isinstance(name, str):
            raise InvalidArgumentError(f"dedup_fields entry {name!r} is not a string")
        if name not in params:
            raise InvalidArgumentError(f"dedup_fields entry {name!r} is not in params")
        names.append(name)
    return tuple(names)
