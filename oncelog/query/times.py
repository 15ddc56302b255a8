"""Times a person reads: log times (epoch milliseconds) as ISO-8601 UTC, one rule for all.

Every time oncelog shows is UTC with milliseconds and a ``Z`` (``utc``): the page, the
CLI's tables and its JSON (``with_times`` puts ``log_time`` next to ``log_time_ms``).
Every time it reads (``--as-of``, ``?as_of=``, the page's "as of" field) is ISO-8601
with a zone, parsed by :func:`oncelog.query.queries.parse_as_of`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

#: What a field named ``<name>_ms`` must end with to be a moment, not a duration.
_MOMENTS: Final = ("time", "deadline", "_at")


def utc(ms: int) -> str:
    """A log time as ISO-8601 UTC with milliseconds: ``2026-12-03T09:41:04.727Z``."""
    moment = datetime.fromtimestamp(ms // 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def time_field(name: str) -> str | None:
    """The readable field beside ``name`` (``log_time`` beside ``log_time_ms``), or None
    when ``name`` is not a moment in milliseconds (a duration, or no ``_ms`` at all)."""
    if not name.endswith("_ms"):
        return None
    base = name.removesuffix("_ms")
    return base if base.endswith(_MOMENTS) else None


def with_times(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with each moment ``<name>_ms`` followed by ``<name>``, its ISO-8601 UTC
    text (None stays None); a field of that name already present is kept as it is."""
    out: dict[str, Any] = {}
    for name, value in values.items():
        out[name] = value
        readable = time_field(name)
        if readable is not None and readable not in values:
            out[readable] = utc(value) if isinstance(value, int) else None
    return out
