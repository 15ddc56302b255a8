"""A commit's flush renews the publishing producers when nothing is acknowledged for a
while, and only then (a fake pair of lanes and an injected clock: no broker)."""

from __future__ import annotations

from typing import Any, cast

import pytest

from oncelog.errors import KafkaOperationError
from oncelog.kafka.lanes import Lanes
from oncelog.projector import publisher
from oncelog.projector.publisher import Publisher
from oncelog.settings import Settings


class _Lanes:
    """Holds ``held`` records; each wait moves the clock a second and delivers
    ``per_wait`` of them; a stuck client (``stuck``) delivers none until renewed."""

    def __init__(self, clock: list[float], held: int, per_wait: int, stuck: bool) -> None:
        self.clock, self.held, self.per_wait, self.stuck = clock, held, per_wait, stuck
        self.done = 0
        self.renewals = 0

    def settled(self) -> int:
        return self.done

    def wait(self, timeout_s: float) -> int:
        self.clock[0] += timeout_s
        if not self.stuck:
            step = min(self.per_wait, self.held)
            self.held, self.done = self.held - step, self.done + step
        return self.held

    def renew(self) -> int:
        self.renewals += 1
        self.stuck = False
        return self.held


def _publisher(lanes: _Lanes, clock: list[float], said: list[str]) -> Publisher:
    return Publisher(Settings(), {}, report=said.append, clock=lambda: clock[0],
                     lanes=cast(Lanes, cast(Any, lanes)))  # fmt: skip


def test_a_stuck_producer_is_renewed_after_the_stall_and_the_flush_completes() -> None:
    clock, said = [0.0], []  # type: ignore[var-annotated]
    lanes = _Lanes(clock, held=10, per_wait=5, stuck=True)
    _publisher(lanes, clock, said).flush()
    assert lanes.renewals == 1
    assert lanes.held == 0
    assert publisher.PUBLISH_STALL_S <= clock[0] < publisher.PUBLISH_STALL_S + 3
    assert said == [
        f"publishing: no record acknowledged for {publisher.PUBLISH_STALL_S:.0f} s; "
        "new producers took the 10 records still held"
    ]


def test_a_slow_flush_that_delivers_is_never_renewed() -> None:
    clock, said = [0.0], []  # type: ignore[var-annotated]
    lanes = _Lanes(clock, held=200, per_wait=1, stuck=False)  # 200 s, a record a second
    _publisher(lanes, clock, said).flush()
    assert lanes.renewals == 0
    assert said == []


def test_a_flush_that_never_ends_fails_typed_at_the_bound() -> None:
    clock, said = [0.0], []  # type: ignore[var-annotated]
    lanes = _Lanes(clock, held=5, per_wait=0, stuck=True)
    lanes.renew = lambda: 5  # type: ignore[method-assign]  # renewed, and stuck again
    with pytest.raises(KafkaOperationError, match="5 records still undelivered"):
        _publisher(lanes, clock, said).flush()
    assert clock[0] == pytest.approx(publisher.FLUSH_TIMEOUT_S, abs=2)
    assert len(said) == int(publisher.FLUSH_TIMEOUT_S // publisher.PUBLISH_STALL_S)
