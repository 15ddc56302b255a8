"""poll_until: the one bounded polling loop. A fake clock: no time passes in these tests."""

from __future__ import annotations

from oncelog.waiting import poll_until


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0
        self.pauses: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def test_the_first_true_answer_is_returned_and_no_pause_follows_it() -> None:
    t = FakeTime()
    answers = iter([None, 0, "ready"])
    found = poll_until(101.0, lambda: next(answers), pause_s=0.25, clock=t.clock, sleep=t.sleep)
    assert found == "ready"
    assert t.pauses == [0.25, 0.25]


def test_the_deadline_gives_none_and_the_last_pause_stops_at_it() -> None:
    t = FakeTime()
    calls: list[float] = []

    def never() -> bool:
        calls.append(t.now)
        return False

    assert poll_until(100.5, never, pause_s=0.2, clock=t.clock, sleep=t.sleep) is None
    assert t.now == 100.5  # never past the deadline
    assert len(calls) == 4  # at 100.0, 100.2, 100.4 and one last try at the deadline


def test_a_deadline_already_past_still_asks_once() -> None:
    t = FakeTime()
    assert poll_until(50.0, lambda: True, clock=t.clock, sleep=t.sleep) is True
    assert poll_until(50.0, lambda: False, clock=t.clock, sleep=t.sleep) is None
    assert t.pauses == []
