"""Steps of the leader's clock against a heartbeating holder (docs/spec.md §4, "Clock steps").

A holder heartbeats every ``beat_ms`` of real time, less than its lease; a rival claims
all the time; the broker's timestamps are real time plus an offset that steps forward
or back at one moment. Judged through the partition clock (the clamp) and the fold, on
a ledger whose bound on a clock step is ``MAX_STEP``:

- a forward step no larger than the bound never reclaims from the holder, whatever
  the lease, beat and moment (and without the bound, the same steps do);
- a larger forward step may: then the reclaim marks the holder's attempt unknown and
  its completion a suspected duplicate, so the double is in the audit;
- a step back never reclaims.
"""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from oncelog.referee.fold import PartitionClock
from oncelog.referee.judge import judge
from oncelog.schemas.models import Decision, ExecutionState, Outcome, Request
from tests.budget import examples
from tests.projector.fold_factories import Op

RIVAL_EVERY_MS = 500
MAX_STEP = 5 * 60 * 1000


def _run(
    lease_ms: int, beat_ms: int, at_ms: int, step_ms: int, span_ms: int, max_step: int = MAX_STEP
) -> list[Decision]:
    """The holder's claim, beats and completion and the rival's claims, judged in order."""
    op = Op()
    events: list[tuple[int, Request]] = [(0, op.claim("holder", lease_ms=lease_ms))]
    events += [(t, op.heartbeat("holder")) for t in range(beat_ms, span_ms, beat_ms)]
    events += [(t, op.claim("rival")) for t in range(1, span_ms, RIVAL_EVERY_MS)]
    events.append((span_ms, op.complete("holder", "done")))
    events.sort(key=lambda event: event[0])
    # One rival claim the moment the clock steps, before the holder can beat again.
    events.insert(
        next(i for i, e in enumerate(events) if e[0] >= at_ms), (at_ms, op.claim("rival"))
    )
    clock, state, decisions = PartitionClock(), None, []
    for offset, (real_ms, request) in enumerate(events):
        broker_ms = 10**9 + real_ms + (step_ms if real_ms >= at_ms else 0)
        clock, state, decision = judge(
            state, request, clock, ts_ms=broker_ms, partition=0, offset=offset,
            max_clock_step_ms=max_step,
        )  # fmt: skip
        decisions.append(decision)
    return decisions


def _reclaims(decisions: list[Decision]) -> list[Decision]:
    return [d for d in decisions if d.outcome is Outcome.RECLAIMED]


leases = st.sampled_from([2_000, 10_000, 60_000, 2 * MAX_STEP])
steps = st.integers(0, MAX_STEP)


@settings(max_examples=examples(300), deadline=None)
@given(lease=leases, beat=st.floats(0.1, 0.9), at=st.integers(1, 30_000), step=steps)
def test_a_forward_step_within_the_bound_never_reclaims_from_a_heartbeating_holder(
    lease: int, beat: float, at: int, step: int
) -> None:
    decisions = _run(lease, max(1, int(lease * beat)), at, step, 40_000)
    assert _reclaims(decisions) == []
    assert decisions[-1].outcome is Outcome.COMPLETED


@settings(max_examples=examples(300), deadline=None)
@given(
    lease=leases, beat=st.floats(0.1, 0.9), at=st.integers(1, 30_000), back=st.integers(1, 10**7)
)
def test_a_step_back_never_reclaims_from_a_heartbeating_holder(
    lease: int, beat: float, at: int, back: int
) -> None:
    decisions = _run(lease, max(1, int(lease * beat)), at, -back, 40_000)
    assert _reclaims(decisions) == []


@settings(max_examples=examples(300), deadline=None)
@given(lease=leases, beat=st.floats(0.1, 0.9), at=st.integers(1, 30_000))
def test_a_step_beyond_the_bound_reclaims_and_the_double_is_in_the_audit(
    lease: int, beat: float, at: int
) -> None:
    decisions = _run(lease, max(1, int(lease * beat)), at, lease + MAX_STEP, 40_000)
    reclaims = _reclaims(decisions)
    assert reclaims, "a step of lease + bound lapses the holder past the bound"
    first = reclaims[0].previous
    assert first is not None
    assert first.outcome_unknown
    assert decisions[-1].outcome is Outcome.STALE_CLAIM
    assert decisions[-1].duplicate_effect_suspected


@pytest.mark.parametrize("lease", [2_000, 10_000, 60_000])
def test_without_the_bound_the_same_steps_reclaim_from_the_holder(lease: int) -> None:
    """The steps the bound absorbs lapse the lease itself: the fold's rule, not the
    scenario, keeps the holder."""
    with_bound = _run(lease, lease // 5, 5_000, lease, 20_000)
    lapsed = [
        d
        for d in with_bound
        if d.outcome is Outcome.IN_PROGRESS
        and isinstance(d.state, ExecutionState)
        and d.log_time_ms >= d.state.lease_deadline_ms
    ]
    assert lapsed, "some rival claim came after the holder's deadline, within the bound"
    assert _reclaims(with_bound) == []
    without = _run(lease, lease // 5, 5_000, lease, 20_000, max_step=0)
    assert _reclaims(without)
    assert without[-1].outcome is Outcome.STALE_CLAIM
