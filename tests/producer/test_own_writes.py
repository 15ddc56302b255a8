"""What a client remembers of its own changes, per partition of the requests topic."""

from __future__ import annotations

from oncelog.producer.own_writes import OwnWrites
from oncelog.schemas.models import Decision, Kind, Outcome


def _decision(partition: int, offset: int, *, changed: bool = True) -> Decision:
    return Decision(
        "r",
        "op",
        Kind.CLAIM,
        Outcome.CLAIMED,
        changed,
        0,
        source_partition=partition,
        source_offset=offset,
    )


def test_the_newest_changing_request_per_partition_is_kept() -> None:
    own = OwnWrites()
    for partition, offset in [(0, 5), (0, 3), (1, 7), (0, 9)]:
        own.saw(_decision(partition, offset))
    assert (own.newest(0), own.newest(1), own.newest(2)) == (9, 7, -1)


def test_a_decision_that_changed_nothing_or_was_not_placed_is_not_waited_for() -> None:
    own = OwnWrites()
    own.saw(_decision(0, 4, changed=False))  # a replay, a conflict: no snapshot follows
    own.saw(_decision(1, -1))  # out of the pure fold: no position
    assert (own.newest(0), own.newest(1)) == (-1, -1)
