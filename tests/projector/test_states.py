"""The bounded state cache: least recently used out first, revoked partitions dropped."""

from __future__ import annotations

import itertools

from oncelog.projector.states import StateCache
from oncelog.referee.fold import fold
from oncelog.schemas.models import ExecutionState
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
