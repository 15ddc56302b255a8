"""The bounded wait for a projection to fold the log up to given offsets (no I/O)."""

from __future__ import annotations

import pytest

from oncelog.errors import LedgerTimeoutError, NoOwnerError
from oncelog.query.catch_up import behind, wait_until_folded
from oncelog.query.models import Positions


class Steps:
    """A source whose positions advance one answer per poll, and a clock that poll moves."""

    def __init__(self, answers: list[dict[int, int] | None]) -> None:
        self.answers = answers
        self.polls = 0
        self.now = 0.0

    def positions(self) -> Positions:
        answer = self.answers[min(self.polls, len(self.answers) - 1)]
        self.polls += 1
        if answer is None:
            raise NoOwnerError("the group is rebalancing; retry")
        return Positions(next_offsets=answer)

    def clock(self) -> float:
        return self.now

    def pause(self, seconds: float) -> None:
        self.now += seconds


def test_behind_counts_missing_records_and_unknown_partitions_as_zero() -> None:
    positions = Positions(next_offsets={0: 5, 1: 9})
    assert behind(positions, {0: 5, 1: 10, 2: 3}) == {1: 1, 2: 3}
    assert behind(positions, {0: 4, 1: 9}) == {}


def test_returns_once_every_partition_reached_its_target() -> None:
    source = Steps([{0: 1}, {0: 3, 1: 0}, {0: 3, 1: 2}])
    got = wait_until_folded(source, {0: 3, 1: 2}, 10, clock=source.clock, pause=source.pause)
    assert got.next_offsets == {0: 3, 1: 2}
    assert source.polls == 3


def test_times_out_naming_the_partitions_behind() -> None:
    source = Steps([{0: 3, 1: 1}])
    with pytest.raises(LedgerTimeoutError) as caught:
        wait_until_folded(source, {0: 3, 1: 2}, 1.0, clock=source.clock, pause=source.pause)
    assert caught.value.code == "timeout"
    assert "{1: 1}" in str(caught.value)
    assert source.now >= 1.0  # it waited the whole bound, not less


def test_a_rebalancing_group_is_asked_again_within_the_bound() -> None:
    source = Steps([None, None, {0: 3}])
    got = wait_until_folded(source, {0: 3}, 10, clock=source.clock, pause=source.pause)
    assert (got.next_offsets, source.polls) == ({0: 3}, 3)
    never = Steps([None])
    with pytest.raises(LedgerTimeoutError) as caught:
        wait_until_folded(never, {0: 3}, 1.0, clock=never.clock, pause=never.pause)
    assert "rebalancing" in str(caught.value)
    assert never.now >= 1.0
