"""Where a newly assigned partition starts, and which snapshot a restore keeps: pure logic."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from oncelog.projector.restore import needs_restore, newest_versions
from oncelog.projector.store import Position
from oncelog.referee.fold import fold, snapshot_of
from oncelog.schemas.models import ExecutionSnapshot
from tests.projector.fold_factories import Op


def test_a_partition_never_folded_here_is_restored() -> None:
    assert needs_restore(None, None, records=0)
    assert needs_restore(None, Position(10, 5), records=10)


def test_an_own_position_nobody_passed_is_resumed() -> None:
    own = Position(next_offset=100, clock_ms=5)
    assert not needs_restore(own, None, records=0)
    # A crash restart: this member's own last handoff is never ahead of its file.
    assert not needs_restore(own, Position(90, 4), records=0)
    assert not needs_restore(own, Position(100, 5), records=0)


def test_a_short_gap_is_refolded() -> None:
    # Another member folded 20 requests since; reading the partition costs 500 records.
    own = Position(next_offset=100, clock_ms=5)
    assert not needs_restore(own, Position(120, 9), records=500)


def test_a_gap_longer_than_a_restore_is_restored() -> None:
    # Another member folded 400 requests since; reading the partition costs 120 records.
    own = Position(next_offset=100, clock_ms=5)
    assert needs_restore(own, Position(500, 9), records=120)
    # A position that never got past an empty partition: refold all, or read as many.
    assert needs_restore(Position(0, None), Position(40, 9), records=40)


@given(
    own=st.none() | st.integers(0, 10_000),
    handoff=st.none() | st.integers(0, 20_000),
    records=st.integers(0, 10_000),
)
def test_a_stale_position_is_restored_exactly_when_the_gap_costs_more(
    own: int | None, handoff: int | None, records: int
) -> None:
    gap = 0 if own is None or handoff is None else handoff - own
    expected = own is None or (handoff is not None and gap > 0 and gap >= records)
    mine = None if own is None else Position(own, 1)
    theirs = None if handoff is None else Position(handoff, 1)
    assert needs_restore(mine, theirs, records) == expected


def _versions(op: Op) -> list[ExecutionSnapshot]:
    """Two versions of one operation: claimed (v1) at offset 0, completed (v2) at offset 1."""
    claimed, d1 = fold(None, op.claim("t1"), 1_000)
    assert claimed is not None
    _, d2 = fold(claimed, op.complete("t1"), 2_000)
    return [snapshot_of(d1, 0, 0), snapshot_of(d2, 0, 1)]


def test_a_zombies_late_older_version_does_not_win_a_restore() -> None:
    v1, v2 = _versions(Op(key_name="step-1"))
    # The new owner published v2; a paused ex-owner then delivered its queued v1.
    latest = newest_versions([v1, v2, v1])
    assert latest[v1.state.operation_id] == v2


def test_the_newest_version_of_each_operation_is_kept() -> None:
    a1, a2 = _versions(Op(key_name="step-1"))
    b1, _ = _versions(Op(key_name="step-2"))
    latest = newest_versions([a1, b1, a2])
    assert latest == {a2.state.operation_id: a2, b1.state.operation_id: b1}
