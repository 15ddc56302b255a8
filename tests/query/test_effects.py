"""Side effects between two positions (``oncelog.query.effects``) over a real DuckDB file.

The small ledger of ``query_factories.build`` (channel run-42, partition 2):

    0 step-1 claimed (pure) t=1000       1 step-1 completed t=2000
    2 step-2 claimed (external) t=3000   3 step-2 reclaimed t=13000
    4 step-2 stale completion t=13001    5 step-2 completed t=13002
    6 charge:order-4471 claimed (external) t=13003
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oncelog.errors import InvalidArgumentError
from oncelog.projector.store import Store
from oncelog.query.effects import Bound, bound, side_effects
from oncelog.query.queries import channel_timeline, parse_as_of
from oncelog.query.ui.routes import parse_ui_as_of
from oncelog.schemas.models import Effect, Fail, Release
from tests.query.query_factories import (
    CHANNEL,
    CHARGE,
    LEASE_MS,
    STEP1,
    STEP2,
    build,
    claim,
    commit,
    complete,
    request,
)

Con = duckdb.DuckDBPyConnection


def at_ms(ms: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)


def offsets(first: int, last: int) -> tuple[Bound, Bound]:
    return bound("from", offset=first), bound("to", offset=last)


def listed(con: Con, start: Bound, end: Bound) -> tuple[list[str], list[str]]:
    answer = side_effects(con, CHANNEL, start, end)
    return answer.pure, answer.external


def test_a_pure_step_is_pure_and_an_external_one_external(con: Con) -> None:
    assert listed(con, *offsets(0, 6)) == ([STEP1], [STEP2, CHARGE])


@pytest.mark.parametrize(
    ("first", "last", "pure", "external"),
    [
        (0, 1, [STEP1], []),
        (1, 2, [STEP1], [STEP2]),
        (2, 2, [], [STEP2]),
        (4, 4, [], [STEP2]),  # a stale completion alone: that attempt's effect ran
        (6, 10**12, [], [CHARGE]),
        (7, 9, [], []),
    ],
)
def test_positions_outside_the_range_are_excluded(
    con: Con, first: int, last: int, pure: list[str], external: list[str]
) -> None:
    assert listed(con, *offsets(first, last)) == (pure, external)


def test_step_numbers_are_a_shorthand_for_step_keys_and_bound_by_their_span(con: Con) -> None:
    answer = side_effects(con, CHANNEL, bound("from", step=1), bound("to", step=2))
    # step-1 starts at its claim (0), step-2 ends at its completion (5): the charge at 6 is out.
    assert (answer.from_offset, answer.to_offset) == (0, 5)
    assert (answer.from_key, answer.to_key) == (STEP1, STEP2)
    assert (answer.pure, answer.external) == ([STEP1], [STEP2])
    by_key = side_effects(con, CHANNEL, bound("from", key=STEP2), bound("to", key=CHARGE))
    assert (by_key.from_offset, by_key.to_offset, by_key.pure) == (2, 6, [])
    assert by_key.external == [STEP2, CHARGE]


def test_time_bounds_select_by_log_time(con: Con) -> None:
    start, end = bound("from", time="1970-01-01T00:00:02Z"), bound("to", time=at_ms(3_000))
    assert listed(con, start, end) == ([STEP1], [STEP2])  # offsets 1 and 2
    plus_one = bound("from", time="1970-01-01T01:00:13.003+01:00")
    assert listed(con, plus_one, bound("to", offset=100)) == ([], [CHARGE])
    mixed = listed(con, bound("from", offset=3), bound("to", time=at_ms(13_001)))
    assert mixed == ([], [STEP2])


@given(st.datetimes(timezones=st.timezones()))
def test_time_bounds_are_parsed_by_the_rule_of_as_of(moment: datetime) -> None:
    text = moment.isoformat()
    parsed = bound("from", time=text).time
    assert parsed is not None
    assert parsed == parse_as_of(text)
    # The same instant (compared in UTC: a zone's ambiguous hours compare unequal across zones).
    assert parsed.astimezone(UTC) == moment.astimezone(UTC) == parse_ui_as_of(None, text)


@pytest.mark.parametrize("text", ["1970-01-01T00:00:02", "yesterday", "2026-13-01T00:00Z", ""])
def test_a_time_bound_is_refused_where_as_of_is(text: str) -> None:
    with pytest.raises(InvalidArgumentError) as as_of:
        parse_as_of(text) if text else parse_as_of("x")
    with pytest.raises(InvalidArgumentError) as info:
        bound("from", time=text or "x")
    assert info.value.code == as_of.value.code == "invalid_argument"
    assert "ISO-8601" in str(info.value) or "time zone" in str(info.value)


BAD_BOUNDS: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    ("no start", {}, {"offset": 3}, "give exactly one of from_offset"),
    ("two starts", {"offset": 1, "time": "1970-01-01T00:00:01Z"}, {"offset": 3}, "got from_offset"),
    ("negative offset", {"offset": -1}, {"offset": 3}, "must not be negative"),
    ("negative step", {"step": -2}, {"offset": 3}, "must not be negative"),
    ("naive time", {"time": "1970-01-01T00:00:01"}, {"offset": 3}, "time zone"),
    ("naive datetime", {"time": datetime(2026, 1, 1)}, {"offset": 3}, "timezone-aware"),
    ("backwards offsets", {"offset": 5}, {"offset": 2}, "earlier position first"),
    ("backwards times", {"time": at_ms(9)}, {"time": at_ms(8)}, "earlier position first"),
    ("backwards keys", {"key": CHARGE}, {"key": STEP1}, "earlier position first"),
    ("key never ran", {"key": "nope"}, {"offset": 3}, "never ran"),
    ("step never ran", {"offset": 0}, {"step": 9}, "'step-9' never ran"),
    ("empty key", {"key": ""}, {"offset": 3}, "must not be empty"),
]


@pytest.mark.parametrize(
    ("case", "start", "end", "says"), BAD_BOUNDS, ids=[c[0] for c in BAD_BOUNDS]
)
def test_bad_bounds_are_invalid_arguments_with_a_hint(
    con: Con, case: str, start: dict[str, Any], end: dict[str, Any], says: str
) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        side_effects(con, CHANNEL, bound("from", **start), bound("to", **end))
    assert info.value.code == "invalid_argument", case
    assert says in info.value.message, info.value.message
    hints = ("oncelog timeline", "earlier position first")
    assert any(hint in info.value.message for hint in hints), info.value.message


def test_a_limit_truncates_and_says_so(con: Con) -> None:
    answer = side_effects(con, CHANNEL, *offsets(0, 6), limit=2)
    assert (answer.pure, answer.external, answer.truncated) == ([STEP1], [STEP2], True)
    assert side_effects(con, CHANNEL, *offsets(0, 6), limit=3).truncated is False
    with pytest.raises(InvalidArgumentError):
        side_effects(con, CHANNEL, *offsets(0, 6), limit=-1)


def test_another_channel_lists_nothing_of_this_one(con: Con) -> None:
    answer = side_effects(con, "run-7", *offsets(0, 6))
    assert (answer.pure, answer.external) == ([STEP1], [])  # run-7's own step-1, partition 0


# --- the listing against a model of what lists a key ------------------------------------

RICH = "run-rich"
_WORK = {"claim", "heartbeat", "complete", "fail", "release"}


def _rich(store: Store) -> None:
    """Grants, replays, conflicts, a release, a failure and a straggler over several keys."""
    c, pure, ext = RICH, Effect.PURE, Effect.EXTERNAL
    records: list[tuple[Any, int]] = [
        (claim(c, "plan", "a0", "p1", "w1", pure), 1_000),
        (complete(c, "plan", "a1", "p1", {"plan": 1}), 1_100),
        (claim(c, "charge_card#1", "a2", "c1", "w1", ext), 1_200),
        (claim(c, "plan", "a3", "p2", "w2", pure), 1_300),  # replayed: no work
        (request(c, "charge_card#1", "a4", "c1", Release()), 1_400),
        (claim(c, "charge_card#1", "a5", "c2", "w2", ext), 1_500),
        (claim(c, "lookup#1", "a6", "l1", "w2", pure), 1_600),
        (request(c, "lookup#1", "a7", "l1", Fail("down", retryable=True)), 1_700),
        (claim(c, "charge_card#1", "a8", "c3", "w3", ext), 1_800),  # in progress: no work
        (complete(c, "charge_card#1", "a9", "c2", {"charged": 1}), 1_900),
        (claim(c, "send_email#1", "b0", "e1", "w1", ext), 2_000),
        (claim(c, "send_email#1", "b1", "e2", "w2", ext), 2_000 + LEASE_MS),
        (complete(c, "send_email#1", "b2", "e1", "sent"), 2_001 + LEASE_MS),  # a straggler
        (claim(c, "lookup#1", "b3", "l2", "w3", pure), 2_002 + LEASE_MS),
        (complete(c, "lookup#1", "b4", "l2", "found"), 2_003 + LEASE_MS),
    ]
    commit(store, 1, records)


@pytest.fixture(scope="module")
def rich(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Con]:
    path: Path = tmp_path_factory.mktemp("effects") / "rich.duckdb"
    with Store(path) as store:
        build(store)
        _rich(store)
        cursor = store.cursor()
        yield cursor
        cursor.close()


def _model(con: Con, first: int, last: int, t0: int, t1: int) -> tuple[list[str], list[str]]:
    """What lists a key, from the timeline: work that changed the state, or a straggler.

    An ``in_progress`` answer changes only the retry memory: no work.
    """
    seen: dict[str, bool] = {}
    for row in channel_timeline(con, RICH):
        did = row.changed and row.kind in _WORK and row.outcome != "in_progress"
        work = did or row.duplicate_effect_suspected
        if work and first <= row.offset <= last and t0 <= row.log_time_ms <= t1:
            seen[row.key_name] = seen.get(row.key_name, False) or row.effect != "pure"
    return [k for k, e in seen.items() if not e], [k for k, e in seen.items() if e]


def test_the_rich_ledger_lists_what_a_reader_expects(rich: Con) -> None:
    answer = side_effects(rich, RICH, bound("from", offset=0), bound("to", offset=14))
    assert answer.pure == ["plan", "lookup#1"]
    assert answer.external == ["charge_card#1", "send_email#1"]
    replay_only = side_effects(rich, RICH, bound("from", offset=3), bound("to", offset=3))
    assert (replay_only.pure, replay_only.external) == ([], [])
    held_elsewhere = side_effects(rich, RICH, bound("from", offset=8), bound("to", offset=8))
    assert held_elsewhere.external == []  # an in_progress answer did no work


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 15),
    st.integers(0, 15),
    st.integers(900, 2_100 + LEASE_MS),
    st.integers(900, 2_100 + LEASE_MS),
)
def test_the_listing_is_the_work_inside_the_range(
    rich: Con, first: int, last: int, t0: int, t1: int
) -> None:
    first, last = min(first, last), max(first, last)
    t0, t1 = min(t0, t1), max(t0, t1)
    start = bound("from", offset=first)
    end = bound("to", time=at_ms(t1).astimezone(timezone(timedelta(hours=-5))))
    answer = side_effects(rich, RICH, start, end)
    assert (answer.pure, answer.external) == _model(rich, first, 10**9, 0, t1)
    by_offsets = side_effects(rich, RICH, start, bound("to", offset=last))
    assert (by_offsets.pure, by_offsets.external) == _model(rich, first, last, 0, 10**12)
    by_times = side_effects(rich, RICH, bound("from", time=at_ms(t0)), end)
    assert (by_times.pure, by_times.external) == _model(rich, 0, 10**9, t0, t1)
