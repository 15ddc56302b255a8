"""The clock drill's pure parts: the phases, the bound they are judged by, the control files.

The drill itself (three brokers under libfaketime) runs in ``make faults``; the defence
it measures is tested row by row in tests/referee (test_fold_table, test_clock_steps).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from drills.faults.clock import BOUND_S, AuditRow, step_before_reclaim, within_bound
from drills.faults.clock_fault import HOUR, LIBRARY, PHASES, FakeClocks, Phase


def test_the_phases_step_forward_and_back_by_minutes_and_by_an_hour() -> None:
    previous = (0, 0, 0)
    steps = []
    for phase in PHASES:
        steps.append(phase.largest_forward_s(previous))
        previous = phase.offsets
    assert max(steps) >= HOUR
    assert any(0 < s <= BOUND_S for s in steps)
    assert any(s < 0 for s in steps)  # a step back
    assert any(p.move_leader and len(set(p.offsets)) == 3 for p in PHASES)


def test_within_bound_judges_each_phase_by_its_largest_forward_step() -> None:
    hour = next(p.name for p in PHASES if p.largest_forward_s((0, 0, 0)) >= HOUR)
    assert not within_bound(hour, BOUND_S)
    assert within_bound(hour, 2 * HOUR)
    assert within_bound(PHASES[0].name, BOUND_S)
    assert not within_bound(PHASES[0].name, 0)
    assert within_bound("healthy", 0)


def _rows(*spec: tuple[str, str, bool, int]) -> list[AuditRow]:
    return [AuditRow(op, outcome, changed, t) for op, outcome, changed, t in spec]


def test_a_reclaim_is_judged_by_the_step_its_partition_took_since_the_lease_was_set() -> None:
    # The run where a leader move inside one phase stepped log time by 241.9 s: the
    # holder's claim, its re-sent copy after the step (answered again, the lease not
    # moved), another operation's records between, then the rival's reclaim.
    rows = _rows(
        ("c/other", "in_progress", False, 1_000),
        ("c/k", "claimed", True, 1_035),
        ("c/k", "claimed", False, 242_904),
        ("c/other", "in_progress", False, 242_915),
        ("c/k", "reclaimed", True, 244_417),
    )
    assert step_before_reclaim(rows, "c/k") == 241_869
    # A heartbeat after the step set the lease again: only what came after it counts.
    beat = [*rows[:3], AuditRow("c/k", "heartbeat_ok", True, 242_910), *rows[3:]]
    assert step_before_reclaim(beat, "c/k") == 1_502
    assert step_before_reclaim(rows, "c/none") is None
    assert step_before_reclaim(rows[2:], "c/k") is None  # the lease's request is not there


def test_largest_forward_s_is_the_largest_offset_gained() -> None:
    assert Phase("x", (60, 180, -60)).largest_forward_s((60, 60, 60)) == 120
    assert Phase("x", (60, 60, 60)).largest_forward_s((120, 120, 120)) == -60


@pytest.mark.skipif(not LIBRARY.exists(), reason="Debian's libfaketime is not installed")
def test_a_control_file_steps_a_process_clock_at_run_time(tmp_path: Path) -> None:
    clocks = FakeClocks(tmp_path, nodes=3)
    clocks.set({2: HOUR})
    assert clocks.offsets == {1: 0, 2: HOUR, 3: 0}
    assert (tmp_path / "node-2.faketime").read_text() == f"+{HOUR}\n"

    def now(node: int) -> int:
        env = {"PATH": "/usr/bin:/bin", **clocks.env(node)}
        done = subprocess.run(["date", "+%s"], env=env, capture_output=True, text=True, check=True)
        return int(done.stdout)

    assert now(2) - now(1) >= HOUR - 5
    clocks.set({2: -HOUR})
    assert now(1) - now(2) >= HOUR - 5
