"""The read-only queries over a small real ledger (see ``query_factories.build``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import duckdb
import pytest

from oncelog.errors import InvalidArgumentError
from oncelog.identity.ids import operation_id
from oncelog.identity.tokens import token_fingerprint
from oncelog.projector.store import Store
from oncelog.query.queries import (
    channel_timeline,
    operation_history,
    parse_as_of,
    step_status,
    suspected_duplicates,
)
from tests.query.query_factories import CHANNEL, CHARGE, LEASE_MS, STEP1, STEP2, Ledger

Con = duckdb.DuckDBPyConnection


def at_ms(ms: int) -> datetime:
    return datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=ms)


def test_current_status_of_a_completed_step(con: Con) -> None:
    status = step_status(con, CHANNEL, step=2)
    assert status.finished
    assert (status.status, status.result, status.epoch, status.worker_id) == (
        "completed",
        "charged",
        2,
        "w2",
    )
    assert (status.version, status.source_offset, status.effect) == (3, 5, "external")
    assert status.operation_id == operation_id(CHANNEL, STEP2)
    assert status.key_name == STEP2
    assert status.as_of is None


def test_status_by_key_name(con: Con) -> None:
    status = step_status(con, CHANNEL, key_name=CHARGE)
    assert (status.status, status.finished, status.worker_id) == ("claimed", False, "w3")
    assert step_status(con, CHANNEL, key_name=STEP1) == step_status(con, CHANNEL, step=1)


def test_unknown_step_is_absent(con: Con) -> None:
    status = step_status(con, CHANNEL, step=99)
    assert (status.status, status.finished, status.version, status.result) == (
        "absent",
        False,
        0,
        None,
    )


@pytest.mark.parametrize(
    ("step", "as_of", "expected"),
    [
        (1, 0, ("claimed", None, 1)),
        (1, 1, ("completed", {"ok": 1}, 2)),
        (1, 1_000_000, ("completed", {"ok": 1}, 2)),
        (2, 1, ("absent", None, 0)),
        (2, 3, ("claimed", None, 2)),
        (2, 4, ("claimed", None, 2)),  # the stale completion made no version
        (2, 5, ("completed", "charged", 3)),
    ],
)
def test_status_as_of_an_offset(
    con: Con, step: int, as_of: int, expected: tuple[str, Any, int]
) -> None:
    status = step_status(con, CHANNEL, step=step, as_of=as_of)
    assert (status.status, status.result, status.version) == expected
    assert status.as_of == as_of


def test_status_as_of_a_time(con: Con) -> None:
    assert step_status(con, CHANNEL, step=1, as_of=at_ms(999)).status == "absent"
    assert step_status(con, CHANNEL, step=1, as_of=at_ms(1_999)).status == "claimed"
    assert step_status(con, CHANNEL, step=1, as_of=at_ms(2_000)).status == "completed"
    # The same instant in another zone is the same position.
    plus_two = at_ms(2_000).astimezone(timezone(timedelta(hours=2)))
    assert step_status(con, CHANNEL, step=1, as_of=plus_two).finished
    step2 = step_status(con, CHANNEL, step=2, as_of=at_ms(3_000 + LEASE_MS))
    assert (step2.epoch, step2.worker_id) == (2, "w2")


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"step": 1, "key_name": STEP1},
        {"step": -1},
        {"step": True},
        {"key_name": ""},
        {"step": 1, "as_of": datetime(2024, 1, 1)},  # naive
        {"step": 1, "as_of": -1},
        {"step": 1, "as_of": "5"},
    ],
)
def test_bad_arguments_fail_before_the_database(kwargs: dict[str, Any]) -> None:
    closed = duckdb.connect()
    closed.close()
    with pytest.raises(InvalidArgumentError) as info:
        step_status(closed, CHANNEL, **kwargs)
    assert info.value.code == "invalid_argument"


def test_operation_history_lists_every_version(con: Con) -> None:
    versions = operation_history(con, operation_id(CHANNEL, STEP2))
    assert [(v.version, v.outcome, v.epoch, v.worker_id) for v in versions] == [
        (1, "claimed", 1, "w1"),
        (2, "reclaimed", 2, "w2"),
        (3, "completed", 2, "w2"),
    ]
    assert [(v.valid_from_offset, v.valid_to_offset) for v in versions] == [
        (2, 3),
        (3, 5),
        (5, None),
    ]
    assert versions[-1].result == "charged"
    assert len(operation_history(con, operation_id(CHANNEL, STEP2), limit=2)) == 2
    assert operation_history(con, "no-such-operation") == []


def test_channel_timeline_is_in_log_order(con: Con) -> None:
    timeline = channel_timeline(con, CHANNEL)
    assert [(e.offset, e.key_name, e.outcome) for e in timeline] == [
        (0, STEP1, "claimed"),
        (1, STEP1, "completed"),
        (2, STEP2, "claimed"),
        (3, STEP2, "reclaimed"),
        (4, STEP2, "stale_claim"),
        (5, STEP2, "completed"),
        (6, CHARGE, "claimed"),
    ]
    assert [e.duplicate_effect_suspected for e in timeline].count(True) == 1
    assert [e.offset for e in channel_timeline(con, CHANNEL, limit=3)] == [0, 1, 2]
    assert channel_timeline(con, "run-unknown") == []


def test_suspected_duplicates_name_the_stale_grant(con: Con) -> None:
    unknown, dup = suspected_duplicates(con)
    # w1's attempt went silent and w2 reclaimed it: its outcome is unknown, and w2
    # completed without reconciling (a possible double) ...
    assert (unknown.kind, unknown.offset, unknown.stale_worker_id) == ("unknown_outcome", 3, "w1")
    assert (unknown.settled, unknown.reconciled) == ("completed", None)
    # ... and then w1's late completion proved it ran: two effects, the operation's verdict.
    assert unknown.verdict == dup.verdict == "double"
    assert (dup.settled, dup.reconciled) == ("completed", None)
    assert dup.kind == "stale_completion"
    assert dup.operation_id == operation_id(CHANNEL, STEP2)
    assert (dup.partition, dup.offset, dup.log_time_ms) == (2, 4, 3_001 + LEASE_MS)
    assert (dup.token_fp, dup.stale_epoch, dup.stale_worker_id) == (
        token_fingerprint("t2"),
        1,
        "w1",
    )
    assert dup.current_epoch == 2
    assert suspected_duplicates(con, limit=0) == []


@pytest.mark.parametrize("raw", [None, ""])
def test_parse_as_of_nothing_is_the_current_state(raw: str | None) -> None:
    assert parse_as_of(raw) is None


def test_parse_as_of_digits_are_an_offset() -> None:
    assert parse_as_of("0") == 0
    assert parse_as_of("42") == 42


@pytest.mark.parametrize(
    ("raw", "utc"),
    [
        ("2024-05-01T12:00:00+02:00", datetime(2024, 5, 1, 10, tzinfo=UTC)),
        ("2024-05-01T10:00:00Z", datetime(2024, 5, 1, 10, tzinfo=UTC)),
        ("2024-05-01T10:00:00.250+00:00", datetime(2024, 5, 1, 10, 0, 0, 250_000, tzinfo=UTC)),
    ],
)
def test_parse_as_of_iso_times_keep_their_zone(raw: str, utc: datetime) -> None:
    parsed = parse_as_of(raw)
    assert isinstance(parsed, datetime)
    assert parsed == utc
    assert parsed.utcoffset() is not None


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("2024-05-01T12:00:00", "needs a time zone"),  # naive: refused, never guessed
        ("yesterday", "an offset or a time.*is not an ISO-8601 time"),
        ("-3", "an offset or a time.*is not an ISO-8601 time"),
    ],
)
def test_parse_as_of_refuses_with_a_typed_error(raw: str, why: str) -> None:
    with pytest.raises(InvalidArgumentError, match=why) as info:
        parse_as_of(raw)
    assert info.value.code == "invalid_argument"


def test_history_reads_columns_never_the_state_blob(ledger: Ledger) -> None:
    con = ledger.store.cursor()
    op = operation_id(CHANNEL, STEP2)
    before = operation_history(con, op)
    assert [(v.lease_deadline_ms, v.tool_name) for v in before] == [
        (3_000 + LEASE_MS, "tool"),
        (3_000 + 2 * LEASE_MS, "tool"),
        (3_000 + 2 * LEASE_MS, "tool"),
    ]
    con.execute("UPDATE history SET state = 'not a state blob'::BLOB")
    assert operation_history(con, op) == before


def test_a_file_without_the_lease_and_tool_columns_gets_them_from_its_blobs(
    ledger: Ledger,
) -> None:
    op = operation_id(CHANNEL, STEP2)
    before = operation_history(ledger.store.cursor(), op)
    ledger.store.close()
    with duckdb.connect(str(ledger.path)) as old:  # as the version before wrote it
        old.execute("DROP INDEX history_operation")
        old.execute("ALTER TABLE history DROP COLUMN lease_deadline_ms")
        old.execute("ALTER TABLE history DROP COLUMN tool_name")
    with Store(ledger.path) as store:
        assert operation_history(store.cursor(), op) == before
        [(missing,)] = (
            store.cursor()
            .execute(
                "SELECT count(*) FROM history WHERE tool_name IS NULL OR lease_deadline_ms IS NULL"
            )
            .fetchall()
        )
        assert missing == 0
