"""The checked-in row builders are exactly what the generator writes for the layouts.

``oncelog/projector/row_builders.py`` holds the builders as a file, so that mypyc compiles
it; it must never drift into a second, hand-kept list of columns.
"""

from __future__ import annotations

from oncelog.projector import rows
from oncelog.projector.tables import EXECUTIONS, HISTORY, REQUESTS
from oncelog.referee.fold import fold
from oncelog.schemas.models import Claim, Effect, ExecutionSnapshot, Request


def test_the_checked_in_builders_are_the_generators_output() -> None:
    written = rows.GENERATED.read_text(encoding="utf-8")
    assert written == rows.module_source(), "run: python -m oncelog.projector.rows"


def test_each_row_has_one_value_per_column_in_layout_order() -> None:
    claim = Claim("charge", b"{}", "h" * 64, 30_000, 60_000, Effect.EXTERNAL, "w1")
    request = Request("r1", "op1", "c1", "k1", "tok", claim)
    state, decision = fold(None, request, 1_000)
    assert state is not None
    snap = ExecutionSnapshot(state, 3, 7, "r1", decision.outcome, 1_000)
    audit = rows.audit_row(3, 7, 1_000, request, decision)
    history = rows.history_row(snap, b"blob")
    execution = rows.execution_row(snap)
    assert (len(audit), len(history), len(execution)) == (
        len(REQUESTS),
        len(HISTORY),
        len(EXECUTIONS),
    )
    audit_by_name = dict(zip((c.name for c in REQUESTS), audit, strict=True))
    assert audit_by_name["request_id"] == "r1"
    assert audit_by_name["worker_id"] == "w1"
    assert audit_by_name["offset"] == 7
    history_by_name = dict(zip((c.name for c in HISTORY), history, strict=True))
    assert history_by_name["state"] == b"blob"
    assert history_by_name["valid_from_offset"] == 7
    assert history_by_name["tool_name"] == "charge"
    execution_by_name = dict(zip((c.name for c in EXECUTIONS), execution, strict=True))
    assert execution_by_name["operation_id"] == "op1"
    assert execution_by_name["partition"] == 3
