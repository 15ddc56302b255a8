"""Which keys of a channel were pure and which external between two log positions (docs/spec.md §6).

A range covers part of the channel's partition of the requests topic. Each end is an
offset, a log time, or a key (a step number stands for the key ``step-<N>``). A key
stands for its own span on the log: as the range's start, its first request that
changed its state (its first grant); as the range's end, its last one (its completion,
say). Both ends are included.

A key is listed when, inside the range, an attempt at it was granted, heartbeated,
completed, failed or released (a request that changed its state), or a fenced attempt
completed (a stale completion: that attempt's effect ran). Replays, ``in_progress``
answers (which change the state's retry memory only), reads, cancels and sweeps do no
work and list nothing. A key is ``external``
when any of those requests met a state whose claim did not declare ``effect="pure"``.

The answer reads the ``requests`` table's columns (one row per folded request, indexed
by channel), never a state blob. Only the channel's rows are materialised first: DuckDB
uses the index for a bare equality filter only (see :mod:`oncelog.query.queries`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final, Literal

import duckdb

from oncelog.errors import InvalidArgumentError
from oncelog.identity.ids import step_key_name
from oncelog.identity.validation import validate_id, validate_int
from oncelog.query import models
from oncelog.query.queries import parse_time, query_rows

End = Literal["from", "to"]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MILLISECOND: Final = timedelta(milliseconds=1)
_LONGEST: Final = 2**63 - 1
_BOUND_HINT: Final = (
    "bound each end of the range by an offset, a time (ISO-8601 with a zone) or a key "
    "that ran: `oncelog timeline <channel>` shows the offsets, times and keys"
)

_ACTIVE: Final = """
WITH r AS MATERIALIZED (
  SELECT "offset", log_time_ms, key_name, kind, outcome, changed, duplicate_effect_suspected,
    effect
  FROM {requests} WHERE channel_id = ?
),
a AS (
  SELECT "offset", log_time_ms, key_name, effect FROM r
  WHERE (changed AND kind IN ('claim', 'heartbeat', 'complete', 'fail', 'release')
         AND outcome <> 'in_progress')
     OR duplicate_effect_suspected
)
"""
_SPANS: Final = (
    _ACTIVE
    + """
SELECT key_name, min("offset"), max("offset") FROM a
WHERE key_name IN (SELECT unnest(?::VARCHAR[])) GROUP BY key_name
"""
)
_LISTED: Final = (
    _ACTIVE
    + """
SELECT key_name, bool_or(effect IS DISTINCT FROM 'pure'), min("offset") AS first FROM a
WHERE "offset" BETWEEN ? AND ? AND log_time_ms BETWEEN ? AND ?
GROUP BY key_name ORDER BY first, key_name LIMIT ?
"""
)


@dataclass(frozen=True)
class Bound:
    """One end of a range: exactly one of an offset, a timezone-aware log time or a key name.

    Build it with :func:`bound`, which checks it.
    """

    offset: int | None = None
    time: datetime | None = None
    key: str | None = None


def bound(
    end: End,
    *,
    offset: int | None = None,
    time: str | datetime | None = None,
    step: int | None = None,
    key: str | None = None,
) -> Bound:
    """The ``end`` of a range from the one position given: an offset, a time (ISO-8601
    text with a zone, or a timezone-aware datetime), a step number or a key name.

    Raises:
        InvalidArgumentError: none or several given, or one malformed; the message says
            which parameters ``end`` takes.
    """
    given = {"offset": offset, "time": time, "step": step, "key": key}
    named = [f"{end}_{name}" for name, value in given.items() if value is not None]
    if len(named) != 1:
        got = ", ".join(named) if named else "none"
        raise InvalidArgumentError(
            f"give exactly one of {end}_offset, {end}_time, {end}_step and {end}_key "
            f"(got {got}): {_BOUND_HINT}"
        )
    try:
        return _bound(end, offset, time, step, key)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"{exc.message}; {_BOUND_HINT}") from exc


def _bound(
    end: End, offset: int | None, time: str | datetime | None, step: int | None, key: str | None
) -> Bound:
    if offset is not None:
        return Bound(offset=_non_negative(f"{end}_offset", offset))
    if isinstance(time, str):
        return Bound(time=parse_time(f"{end}_time", time))
    if time is not None:
        if time.tzinfo is None or time.utcoffset() is None:
            raise InvalidArgumentError(f"{end}_time must be timezone-aware")
        return Bound(time=time)
    if step is not None:
        return Bound(key=step_key_name(_non_negative(f"{end}_step", step)))
    return Bound(key=validate_id(f"{end}_key", key))


def _non_negative(field: str, value: object) -> int:
    number = validate_int(field, value)
    if number < 0:
        raise InvalidArgumentError(f"{field} must not be negative, got {number}")
    return number


def _ms(moment: datetime) -> int:
    # Exact integer arithmetic: float timestamps can be off by a millisecond.
    return (moment - _EPOCH) // _MILLISECOND


def _check_order(start: Bound, end: Bound) -> None:
    """Refuse a range whose end is before its start, where both ends are of one kind."""
    hint = "give the earlier position first"
    if start.offset is not None and end.offset is not None and end.offset < start.offset:
        raise InvalidArgumentError(
            f"to_offset {end.offset} is before from_offset {start.offset}: {hint}"
        )
    if start.time is not None and end.time is not None and end.time < start.time:
        raise InvalidArgumentError(
            f"to_time {end.time.isoformat()} is before from_time {start.time.isoformat()}: {hint}"
        )


def _key_offsets(
    con: duckdb.DuckDBPyConnection, channel_id: str, start: Bound, end: Bound
) -> tuple[int | None, int | None]:
    """The offsets the key bounds stand for: the start key's first, the end key's last."""
    keys = [k for k in (start.key, end.key) if k is not None]
    if not keys:
        return start.offset, end.offset
    spans = {key: (first, last) for key, first, last in query_rows(con, _SPANS, [channel_id, keys])}
    for which, key in (("from", start.key), ("to", end.key)):
        if key is not None and key not in spans:
            raise InvalidArgumentError(
                f"{which} key {key!r} never ran in channel {channel_id!r} (no request of it "
                f"changed its state), so it marks no position: {_BOUND_HINT}"
            )
    first = spans[start.key][0] if start.key is not None else start.offset
    last = spans[end.key][1] if end.key is not None else end.offset
    if first is not None and last is not None and last < first:
        raise InvalidArgumentError(
            f"the range ends at offset {last} ({end.key or 'to_offset'}), before it starts at "
            f"offset {first} ({start.key or 'from_offset'}): give the earlier position first"
        )
    return first, last


def side_effects(
    con: duckdb.DuckDBPyConnection,
    channel_id: str,
    start: Bound,
    end: Bound,
    limit: int | None = None,
) -> models.SideEffects:
    """Which keys of ``channel_id`` were pure and which external in ``[start, end]``.

    Keys are listed in log order of their first listed request in the range, at most
    ``limit`` of them (``truncated`` says when more were); see the module's docstring
    for what lists a key.

    Raises:
        InvalidArgumentError: a bad id, bound or limit, or a key bound that never ran.
    """
    validate_id("channel_id", channel_id)
    cap = None if limit is None else _non_negative("limit", limit)
    _check_order(start, end)
    first, last = _key_offsets(con, channel_id, start, end)
    params = [
        channel_id,
        0 if first is None else first,
        _LONGEST if last is None else last,
        -_LONGEST if start.time is None else _ms(start.time),
        _LONGEST if end.time is None else _ms(end.time),
        None if cap is None else cap + 1,
    ]
    rows = query_rows(con, _LISTED, params)
    listed = rows if cap is None else rows[:cap]
    return models.SideEffects(
        channel_id=channel_id,
        from_offset=first,
        to_offset=last,
        from_time=start.time,
        to_time=end.time,
        from_key=start.key,
        to_key=end.key,
        pure=[key for key, external, _ in listed if not external],
        external=[key for key, external, _ in listed if external],
        truncated=len(rows) > len(listed),
    )
