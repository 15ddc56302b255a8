"""When a projector without partitions asks the group, and when it rejoins. No I/O."""

from __future__ import annotations

import pytest

from oncelog.projector.membership import GroupState, MemberInfo
from oncelog.projector.unassigned_watch import (
    GroupView,
    UnassignedWatch,
    group_view,
    rejoin_reason,
)

ME = "projector-0"


class FakeClock:
    """Monotonic seconds that move only when told."""

    def __init__(self) -> None:
        self.now = 1000.0

    def advance(self, seconds: float) -> None:
        self.now += seconds


def _watch(clock: FakeClock, grace_s: float = 15.0) -> UnassignedWatch:
    return UnassignedWatch(grace_s, clock=lambda: clock.now)


def test_nothing_is_due_before_the_first_assignment() -> None:
    clock = FakeClock()
    watch = _watch(clock)
    clock.advance(3600)
    assert not watch.due()  # joining at start-up is librdkafka's first job


def test_due_once_nothing_was_held_for_the_grace_period() -> None:
    clock = FakeClock()
    watch = _watch(clock)
    watch.holding([0, 1, 2])
    clock.advance(100)
    watch.holding([])  # lost
    clock.advance(14.9)
    assert not watch.due()
    clock.advance(0.1)
    assert watch.due()
    assert watch.unassigned_s() == pytest.approx(15.0)


def test_an_assignment_within_the_grace_period_clears_it() -> None:
    clock = FakeClock()
    watch = _watch(clock)
    watch.holding([0])
    watch.holding([])
    clock.advance(10)
    watch.holding([0, 1, 2])
    clock.advance(60)
    assert not watch.due()
    assert watch.unassigned_s() == 0.0


def test_a_second_release_does_not_restart_the_grace_period() -> None:
    clock = FakeClock()
    watch = _watch(clock)
    watch.holding([0, 1])
    watch.holding([1])
    watch.holding([])
    clock.advance(10)
    watch.holding([])  # a rejoin releases what is (not) held again
    clock.advance(5)
    assert watch.due()


def test_after_a_look_the_next_is_a_grace_period_away() -> None:
    clock = FakeClock()
    watch = _watch(clock)
    watch.holding([0])
    watch.holding([])
    clock.advance(20)
    assert watch.due()
    watch.looked()
    clock.advance(14)
    assert not watch.due()
    clock.advance(1)
    assert watch.due()
    assert watch.unassigned_s() == pytest.approx(35.0)  # still counted from the release


def _view(
    settled: bool = True,
    listed: bool = True,
    mine: tuple[int, ...] = (),
    unowned: tuple[int, ...] = (),
) -> GroupView:
    return GroupView(settled, listed, frozenset(mine), frozenset(unowned))


def test_no_answer_or_a_rebalance_in_progress_is_waited_out() -> None:
    assert rejoin_reason(None) is None
    assert rejoin_reason(_view(settled=False, listed=False, unowned=(0, 1, 2))) is None


def test_a_spare_member_whose_partitions_all_have_owners_stays() -> None:
    assert rejoin_reason(_view()) is None


def test_unowned_partitions_make_it_rejoin() -> None:
    reason = rejoin_reason(_view(unowned=(2, 0)))
    assert reason == "partitions [0, 2] have no owner in the group"


def test_a_group_that_does_not_list_it_makes_it_rejoin() -> None:
    reason = rejoin_reason(_view(listed=False))
    assert reason == "the group does not list this projector"


def test_partitions_the_group_gives_it_but_it_does_not_hold_make_it_rejoin() -> None:
    reason = rejoin_reason(_view(mine=(1, 0)))
    assert reason == "the group assigns partitions [0, 1] to this projector, which holds none"


def test_the_group_view_of_the_only_member_that_lost_everything() -> None:
    # After a restarted coordinator: the group lists this projector with no partition.
    state = GroupState("Stable", [MemberInfo(ME, "oncelog-projector", ())])
    view = group_view(state, partitions=3, projector_id=ME)
    assert view == _view(unowned=(0, 1, 2))
    assert rejoin_reason(view) is not None


def test_the_group_view_of_a_spare_member_among_others() -> None:
    members = [
        MemberInfo("projector-1", "oncelog-projector", (0, 2)),
        MemberInfo("projector-2", "oncelog-projector", (1,)),
        MemberInfo(ME, "oncelog-projector", ()),
    ]
    view = group_view(GroupState("Stable", members), partitions=3, projector_id=ME)
    assert view == _view()
    assert rejoin_reason(view) is None


def test_the_group_view_of_an_empty_group() -> None:
    view = group_view(GroupState("Empty", []), partitions=2, projector_id=ME)
    assert view == _view(listed=False, unowned=(0, 1))
    assert rejoin_reason(view) == "the group does not list this projector"
