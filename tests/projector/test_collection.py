"""A serving projector's full cycle collections: when idle and due, or at the latest bound."""

from __future__ import annotations

import gc

from oncelog.projector.collection import (
    NEVER,
    FullCollections,
    full_collections_by_schedule,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _schedule(clock: Clock, runs: list[int]) -> FullCollections:
    return FullCollections(idle_interval_s=60, max_interval_s=600, clock=clock, collect=runs.append)


def test_an_idle_projector_collects_once_the_idle_interval_has_passed() -> None:
    clock, runs = Clock(), list[int]()
    schedule = _schedule(clock, runs)
    clock.now += 59.9
    assert not schedule.tick(idle=True)
    clock.now += 0.1
    assert schedule.tick(idle=True)
    assert runs == [2]  # a full collection: generation 2
    assert not schedule.tick(idle=True)  # the interval starts again
    assert schedule.runs == 1


def test_a_busy_projector_waits_for_the_maximum_interval() -> None:
    clock, runs = Clock(), list[int]()
    schedule = _schedule(clock, runs)
    clock.now += 599
    assert not schedule.tick(idle=False)
    clock.now += 1
    assert schedule.tick(idle=False)
    assert runs == [2]
    clock.now += 100
    assert not schedule.tick(idle=False)
    assert schedule.tick(idle=True)  # past the idle interval, and idle
    assert runs == [2, 2]


def test_the_block_stops_automatic_full_collections_and_restores_the_thresholds() -> None:
    before = gc.get_threshold()
    with full_collections_by_schedule(_schedule(Clock(), [])):
        young, middle, full = gc.get_threshold()
        assert (young, middle) == before[:2]
        assert full == NEVER
    assert gc.get_threshold() == before


def test_the_thresholds_come_back_after_an_error_in_the_block() -> None:
    before = gc.get_threshold()
    try:
        with full_collections_by_schedule(_schedule(Clock(), [])):
            raise RuntimeError("the projector failed")
    except RuntimeError:
        pass
    assert gc.get_threshold() == before
