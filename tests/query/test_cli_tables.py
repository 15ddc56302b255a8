"""The CLI's tables read at 100 columns (issue 40, finding 8).

A run with the faults a newcomer meets first (a reclaim, a late completion, a
reconciled retry, a failure), written through the real fold and store with the
names real workers have, is shown by ``timeline``, ``history``, ``duplicates`` and
``effects`` at ``COLUMNS=100``: no line is wider, no value is cut to an ellipsis, and
no value wraps onto a line of its own. ``--wide`` and ``--json`` give the rest.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oncelog.cli import app
from oncelog.projector.store import Store
from oncelog.query.times import utc
from oncelog.schemas.models import Fail
from tests.projector.fold_factories import LEASE_MS, Op
from tests.projector.store_factories import feed

S = 1_000
T0 = 1_796_371_200_000  # 2026-12-04T08:00:00Z: a real day, not 1970
A, B = "vm:23045:9f2c1a", "vm:23051:c3d4e5"  # default worker ids: host:pid:random
CHANNEL = "checkout-4471"


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "ledger.duckdb"
    refund = Op(channel_id=CHANNEL, key_name="refund:order-4471", tool_name="refund")
    charge = Op(channel_id=CHANNEL, key_name="charge:order-4471", tool_name="charge")
    email = Op(channel_id=CHANNEL, key_name="email:4471", tool_name="send_email")
    with Store(path) as store:
        feed(store, 0, [
            (charge.claim("t1", worker=A), T0),
            (charge.heartbeat("t1"), T0 + 1 * S),
            (charge.complete("t1", {"charge": "ch_1"}), T0 + 2 * S),
            (refund.claim("t2", worker=A), T0 + 3 * S),  # A pauses past its lease
            (refund.claim("t3", worker=B), T0 + 3 * S + LEASE_MS),
            (refund.complete("t3", {"refund": "re_1"})._replace(reconciled="found"),
             T0 + 4 * S + LEASE_MS),
            (refund.complete("t2", {"refund": "re_1"}), T0 + 5 * S + LEASE_MS),  # fenced
            (email.claim("t4", worker=B), T0 + 6 * S + LEASE_MS),
            (email.request("t4", Fail("result_unrecordable: datetime is not JSON", False)),
             T0 + 7 * S + LEASE_MS),
        ])  # fmt: skip
    return str(path)  # closed: the CLI opens it read-only, as after serve stopped


def _show(*args: str, columns: str = "100") -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    return result.output


def _assert_readable(output: str, rows: int) -> None:
    lines = output.rstrip("\n").split("\n")
    assert "…" not in output
    assert max(len(line) for line in lines) <= 100
    # One line per row: a row wrapped or folded would add a line.
    body = [line for line in lines if line[:1].isdigit()]
    assert len(body) == rows, output


def test_the_timeline_reads_at_100_columns(db: str) -> None:
    output = _show("timeline", CHANNEL, "--db", db)
    rows = json.loads(_show("timeline", CHANNEL, "--db", db, "--json"))
    _assert_readable(output, len(rows))
    header = next(line for line in output.split("\n") if line.startswith("offset"))
    assert header.split() == ["offset", "time", "key", "kind", "outcome", "epoch", "worker",
                              "audit"]  # fmt: skip
    late = next(line for line in output.split("\n") if "stale_claim" in line)
    assert "refund:order-4471" in late
    assert A in late
    assert "late completion" in late
    assert "reconciled found" in output
    assert "unknown outcome" in output
    assert "unrecordable" in output
    assert "times UTC, 2026-12-04" in output
    assert utc(T0)[11:-1] in output  # 08:00:00.000


def test_history_and_duplicates_read_at_100_columns(db: str) -> None:
    rows = json.loads(_show("timeline", CHANNEL, "--db", db, "--json"))
    refund = next(r["operation_id"] for r in rows if r["key_name"] == "refund:order-4471")
    _assert_readable(_show("history", refund, "--db", db), 3)
    audit = _show("duplicates", "--db", db)
    _assert_readable(audit, 2)
    assert "1 single" in audit.split("\n")[0]  # the reconciled zombie: one refund
    assert "double" not in audit.split("\n", 1)[1]
    effects = _show("effects", CHANNEL, "--from-offset", "0", "--to-offset", "99", "--db", db)
    assert "…" not in effects
    assert max(len(line) for line in effects.split("\n")) <= 100


def test_wide_and_json_give_every_column(db: str) -> None:
    wide = _show("timeline", CHANNEL, "--db", db, "--wide", columns="400")
    for column in ("token_fp", "state_epoch", "state_worker_id", "duplicate_effect_suspected",
                   "outcome_unknown", "reconciled", "log_time", "error_code"):  # fmt: skip
        assert column in wide
    assert utc(T0) in wide
    [*_, late] = list(json.loads(_show("duplicates", "--db", db, "--json")))
    assert (late["kind"], late["verdict"], late["settled"], late["reconciled"]) == (
        "stale_completion", "single", "completed", "found"
    )  # fmt: skip
    history = _show("history", late["operation_id"], "--db", db, "--wide", columns="400")
    assert "valid_from_offset" in history
    assert "result" in history
