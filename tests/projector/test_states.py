"""The bounded state cache: least recently used out first, revoked partitions dropped."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from oncelog.projector.states import StateCache
from oncelog.referee.fold import fold
from oncelog.schemas.models import ExecutionState
from oncelog.testing.clock import ManualClock
from tests.projector.fold_factories import Op

_keys = itertools.count()


def _state() -> ExecutionState:
    """A claimed state of a fresh operation."""
    state, _ = fold(None, Op(key_name=f"step-{next(_keys)}").claim("t1"), 1_000)
    assert state is not None
    return state


def test_eviction_drops_the_least_recently_used_down_to_the_slack() -> None:
    cache = StateCache(max_states=10)
    states = [_state() for _ in range(11)]
    for s in states:
        cache.put(0, s)
    cache.get_many([states[0].operation_id])  # used again: now the most recent
    assert cache.over_limit()
    assert cache.evict() == 2
    assert not cache.over_limit()
    kept = cache.get_many(s.operation_id for s in states)
    assert set(kept) == {s.operation_id for s in [states[0], *states[3:]]}


def test_put_replaces_the_older_version() -> None:
    cache = StateCache()
    op = Op()
    first, _ = fold(None, op.claim("t1"), 1_000)
    second, _ = fold(first, op.complete("t1"), 2_000)
    assert first is not None
    assert second is not None
    cache.put(3, first)
    cache.put(3, second)
    assert len(cache) == 1
    assert cache.get_many([op.operation_id]) == {op.operation_id: second}


def test_a_revoked_partition_is_forgotten() -> None:
    cache = StateCache()
    a, b = _state(), _state()
    cache.put(0, a)
    cache.put(1, b)
    cache.drop_partitions([1])
    assert cache.get_many([a.operation_id, b.operation_id]) == {a.operation_id: a}


def _seconds(clock: ManualClock) -> Callable[[], float]:
    return lambda: clock.now_ms() / 1000


def test_states_unused_for_the_idle_time_go_however_few_they_are() -> None:
    clock = ManualClock(start_ms=0)
    cache = StateCache(max_states=1_000, max_idle_s=100.0, clock=_seconds(clock))
    old, used, recent = _state(), _state(), _state()
    cache.put(0, old)
    cache.put(0, used)
    clock.advance(60)
    cache.get_many([used.operation_id])  # used again: its idle time starts over
    cache.put(0, recent)
    clock.advance(50)
    assert cache.over_limit()  # the oldest was last used 110 s ago
    assert cache.evict() == 1
    assert not cache.over_limit()
    assert set(cache.get_many([old.operation_id, used.operation_id, recent.operation_id])) == {
        used.operation_id,
        recent.operation_id,
    }


def test_eviction_by_idle_time_keeps_a_slack_before_the_next() -> None:
    clock = ManualClock(start_ms=0)
    cache = StateCache(max_states=1_000, max_idle_s=100.0, clock=_seconds(clock))
    first, second = _state(), _state()
    cache.put(0, first)
    clock.advance(5)
    cache.put(0, second)
    clock.advance(100)  # first unused for 105 s, second for 100 s: both past 90 % of it
    assert cache.over_limit()
    assert cache.evict() == 2
    cache.put(0, _state())
    clock.advance(95)
    assert not cache.over_limit()  # within the idle time: nothing to drain for
