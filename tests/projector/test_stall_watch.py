"""The stall watch, pure: which held partition has requests waiting and folds none."""

from __future__ import annotations

from oncelog.projector.stall_watch import StallWatch


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def watch(clock: Clock) -> StallWatch:
    return StallWatch(every_s=5.0, stall_s=20.0, clock=clock)


def looks(
    w: StallWatch, clock: Clock, until: float, nexts: dict[int, int], highs: dict[int, int]
) -> str | None:
    """Look every 5 s from now to ``until``; the first reason given."""
    while clock.now < until:
        clock.now += 5.0
        assert w.due()
        why = w.look(nexts, highs)
        if why is not None:
            return why
    return None


def test_requests_waiting_and_none_folded_for_the_stall_time_is_a_stall() -> None:
    clock = Clock()
    w = watch(clock)
    why = looks(w, clock, 40.0, {0: 10, 1: 0}, {0: 10, 1: 3})
    assert why is not None
    assert why.startswith("partition 1 not fetched: 3 requests waiting at offset 0")
    assert clock.now == 25.0  # first seen waiting at 5 s, 20 s later


def test_a_partition_that_folds_anything_is_not_stalled() -> None:
    clock = Clock()
    w = watch(clock)
    for step in range(20):  # lagging far behind, but it moves
        clock.now += 5.0
        assert w.due()
        assert w.look({0: 100 + step}, {0: 10_000}) is None


def test_a_caught_up_or_unknown_partition_is_never_stalled() -> None:
    clock = Clock()
    w = watch(clock)
    assert looks(w, clock, 200.0, {0: 7, 1: 0}, {0: 7, 1: -1001}) is None
    assert looks(w, clock, 400.0, {0: 7}, {}) is None


def test_a_look_long_after_the_one_before_starts_the_wait_over() -> None:
    # The folding thread itself was held up (a long commit): nothing was fetched by anyone.
    clock = Clock()
    w = watch(clock)
    clock.now = 5.0
    assert w.look({1: 0}, {1: 3}) is None
    clock.now = 40.0
    assert w.look({1: 0}, {1: 3}) is None  # waiting from 40 s now
    clock.now = 55.0
    assert w.look({1: 0}, {1: 3}) is None  # 15 s apart: more than half the stall time
    assert looks(w, clock, 80.0, {1: 0}, {1: 3}) is not None


def test_due_once_per_period() -> None:
    clock = Clock()
    w = watch(clock)
    assert not w.due()
    clock.now = 4.9
    assert not w.due()
    clock.now = 5.0
    assert w.due()
    assert not w.due()
