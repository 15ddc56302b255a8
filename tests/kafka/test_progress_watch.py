"""When a client counts as stuck: work that was there the stall time ago is still not
done (an injected clock: no broker)."""

from __future__ import annotations

from oncelog.kafka.progress_watch import ProgressWatch


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_work_undone_for_the_stall_time_is_a_stall() -> None:
    clock = _Clock()
    watch = ProgressWatch(30.0, clock)
    assert not watch.stalled(done=7, target=10)  # three records held from here
    clock.now = 29.0
    assert not watch.stalled(done=7, target=12)
    clock.now = 30.0
    assert watch.stalled(done=7, target=12)
    clock.now = 31.0
    assert not watch.stalled(done=7, target=12)  # after a stall, the wait starts over
    clock.now = 61.0
    assert watch.stalled(done=7, target=12)


def test_the_oldest_work_decides_not_later_work() -> None:
    # More records were sent meanwhile, and some settled: not the ten held at 0 s.
    clock = _Clock()
    watch = ProgressWatch(30.0, clock)
    assert not watch.stalled(done=0, target=10)
    clock.now = 20.0
    assert not watch.stalled(done=9, target=40)
    clock.now = 30.0
    assert watch.stalled(done=9, target=60)


def test_work_done_since_moves_the_wait_to_the_next_mark() -> None:
    clock = _Clock()
    watch = ProgressWatch(30.0, clock)
    assert not watch.stalled(done=0, target=10)
    clock.now = 20.0
    assert not watch.stalled(done=5, target=20)
    clock.now = 40.0
    assert not watch.stalled(done=10, target=20)  # what was there at 0 s is done
    clock.now = 49.0
    assert not watch.stalled(done=19, target=25)
    clock.now = 50.0
    assert watch.stalled(done=19, target=25)  # what was there at 20 s is not


def test_nothing_left_to_do_starts_the_wait_over() -> None:
    clock = _Clock()
    watch = ProgressWatch(30.0, clock)
    assert not watch.stalled(done=4, target=5)
    clock.now = 20.0
    assert not watch.stalled(done=5, target=5)  # caught up
    clock.now = 40.0
    assert not watch.stalled(done=5, target=6)  # new work: a new wait from here
    clock.now = 69.0
    assert not watch.stalled(done=5, target=6)
    clock.now = 70.0
    assert watch.stalled(done=5, target=6)
