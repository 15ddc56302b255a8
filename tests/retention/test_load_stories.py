"""The retention drill's stories, judged by the shared referee step: each tells what its name
says (an approval story's forged decision is refused, its signed one decides)."""

from __future__ import annotations

import pytest

from drills.retention import load
from oncelog.referee.fold import PartitionClock
from oncelog.referee.judge import judge
from oncelog.schemas.models import ExecutionState, Request

T0 = 1_800_000_000_000
LATER = T0 + load.SHORT_MS + 1  # the second phase, as the drill writes it


def _outcomes(story: str) -> list[tuple[str, bool]]:
    op = load.operation(3, story)
    state: ExecutionState | None = None
    seen = []
    timed: list[tuple[Request, int]] = [(r, T0) for r in op.first]
    for request, t in [*timed, *((r, LATER) for r in op.second)]:
        judged = judge(state, request, PartitionClock(), ts_ms=t, partition=0, offset=0)
        state, decision = judged.state, judged.decision
        seen.append((decision.outcome.value, decision.duplicate_effect_suspected))
    return seen


@pytest.mark.parametrize(
    ("story", "expected"),
    [
        ("completed", ["claimed", "heartbeat_ok", "completed", "replayed"]),
        ("lapsed_double", ["claimed", "reclaimed", "stale_claim", "completed"]),
        ("released", ["claimed", "reclaimed", "released"]),
        ("failed_retry", ["claimed", "heartbeat_ok", "failed", "reclaimed", "completed"]),
        ("result_expired", ["claimed", "completed", "result_expired"]),
        ("conflict", ["claimed", "completed", "conflict"]),
        ("approved", ["awaiting_approval", "approval_refused", "approved", "claimed", "completed"]),
        ("denied", ["awaiting_approval", "approval_refused", "denied", "denied"]),
    ],
)
def test_each_story_is_judged_as_named(story: str, expected: list[str]) -> None:
    assert [outcome for outcome, _ in _outcomes(story)] == expected


def test_the_lapsed_holders_completion_is_a_suspected_double() -> None:
    assert [double for _, double in _outcomes("lapsed_double")] == [False, False, True, False]


def test_every_story_is_written_and_the_total_is_reached() -> None:
    ops = list(load.operations(1_000))
    assert {story for _, story in ops} == set(load.STORIES)
    assert sum(len(op.first) + len(op.second) for op, _ in ops) >= 1_000
    keys = {(op.channel, op.key) for op, _ in ops}
    assert len(keys) == len(ops)  # one operation per key: the stories do not mix
