"""The reply partition pick: the quietest partitions, uniformly; a pin wins."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oncelog.errors import ConfigError
from oncelog.producer.reply_partition import choose, quietest


@given(
    recent=st.dictionaries(st.integers(0, 63), st.integers(0, 10**6), min_size=1),
    seed=st.integers(),
)
def test_the_pick_is_always_one_of_the_quietest(recent: dict[int, int], seed: int) -> None:
    chosen = quietest(recent, random.Random(seed))
    assert recent[chosen] == min(recent.values())


def test_the_pick_spreads_over_all_the_quietest_and_avoids_busy_ones() -> None:
    recent = dict.fromkeys(range(8), 0) | {3: 5_000, 6: 1}
    rng = random.Random(7)
    picks = Counter(quietest(recent, rng) for _ in range(6_000))
    assert set(picks) == {0, 1, 2, 4, 5, 7}
    assert min(picks.values()) > 800  # ~1000 each: uniform, not the first one


def test_a_pinned_partition_is_taken_without_asking_the_broker() -> None:
    never = None  # no consumer: a pin needs no broker
    assert choose(never, "t", 32, 31, rng=random.Random(), now_ms=0) == 31  # type: ignore[arg-type]


@pytest.mark.parametrize("pinned", [-1, 32, 40])
def test_a_pinned_partition_that_does_not_exist_is_a_config_error(pinned: int) -> None:
    with pytest.raises(ConfigError, match=f"reply partition {pinned} does not exist") as info:
        choose(None, "led.decisions", 32, pinned, rng=random.Random(), now_ms=0)  # type: ignore[arg-type]
    assert info.value.code == "config_error"
