"""Times a person reads: the CLI puts ISO-8601 UTC beside each ``*_ms`` moment."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from oncelog.cli import app
from oncelog.identity.ids import operation_id
from oncelog.query.times import time_field, utc, with_times
from tests.query.query_factories import CHANNEL, STEP2, Ledger


@given(st.integers(min_value=0, max_value=253_402_300_799_999))  # up to year 9999
def test_utc_is_the_same_instant_to_the_millisecond(ms: int) -> None:
    text = utc(ms)
    assert text.endswith("Z")
    back = datetime.fromisoformat(text.replace("Z", "+00:00"))
    assert back.tzinfo is not None
    assert round((back - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1000) == ms


def test_only_moments_get_a_readable_twin() -> None:
    assert time_field("log_time_ms") == "log_time"
    assert time_field("lease_deadline_ms") == "lease_deadline"
    assert time_field("expires_at_ms") == "expires_at"
    assert time_field("lease_ms") is None  # a duration, not a moment
    assert time_field("offset") is None
    assert with_times({"log_time_ms": 1500, "lease_deadline_ms": None}) == {
        "log_time_ms": 1500,
        "log_time": "1970-01-01T00:00:01.500Z",
        "lease_deadline_ms": None,
        "lease_deadline": None,
    }


def test_json_and_tables_show_log_times_in_utc(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)  # captured: tables at their natural width
    runner, db = CliRunner(), str(ledger.path)
    ledger.store.close()  # the CLI opens the file read-only, as after serve stopped
    timeline = json.loads(runner.invoke(app, ["timeline", CHANNEL, "--db", db, "--json"]).output)
    assert timeline
    assert all(row["log_time"] == utc(row["log_time_ms"]) for row in timeline)
    status = json.loads(runner.invoke(app, ["status", CHANNEL, "2", "--db", db, "--json"]).output)
    assert status["log_time"] == utc(status["log_time_ms"])
    op = operation_id(CHANNEL, STEP2)
    history = runner.invoke(app, ["history", op, "--db", db, "--wide"])
    assert "log_time" in history.output
    assert "1970-01-01T00:00:03.000Z" in history.output  # step-2's first claim, at 3000 ms
    table = runner.invoke(app, ["timeline", CHANNEL, "--db", db, "--wide"])
    assert "log_time" in table.output
    assert "1970-01-01T00:00:01.000Z" in table.output
    # By default the time of day, the day once in the caption (every row is of one day).
    short = runner.invoke(app, ["history", op, "--db", db]).output
    assert "00:00:03.000" in short
    assert "times UTC, 1970-01-01" in short
    assert "T00:00:03" not in short
    person = runner.invoke(app, ["status", CHANNEL, "2", "--db", db])
    assert f"log_time: {status['log_time']}" in person.output
