"""The group read back from a ``list_groups`` answer (a stand-in admin client). No I/O."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import pytest
from confluent_kafka import KafkaError, KafkaException

from oncelog.projector.membership import GroupState, MemberInfo, read_group

GROUP, TOPIC = "p.projector", "p.requests"


def assignment(*partitions: int) -> bytes:
    name = TOPIC.encode()
    return (
        struct.pack(">hih", 0, 1, len(name))
        + name
        + struct.pack(f">i{len(partitions)}i", len(partitions), *partitions)
        + struct.pack(">i", -1)
    )


@dataclass
class Member:  # what confluent_kafka's GroupMember carries
    id: str
    client_id: str
    assignment: bytes | None


@dataclass
class Listed:  # what confluent_kafka's GroupMetadata carries
    id: str
    state: str
    members: list[Member] = field(default_factory=list)
    error: KafkaError | None = None


class Admin:
    def __init__(self, *listed: Listed) -> None:
        self.listed = list(listed)
        self.asked: list[tuple[str, float]] = []

    def list_groups(self, group: str, timeout: float) -> list[Listed]:
        self.asked.append((group, timeout))
        return self.listed


def test_members_are_named_by_the_id_in_their_client_id() -> None:
    admin = Admin(
        Listed("other", "Stable", [Member("x-1", "oncelog-projector/x@http://x:1", None)]),
        Listed(GROUP, "Stable", [
            Member("p%2F1-uuid", "oncelog-projector/p%2F1@http://a:1", assignment(0, 2)),
            Member("old-uuid", "oncelog-projector@http://b:1", assignment(1)),
        ]),
    )  # fmt: skip
    state = read_group(admin, GROUP, TOPIC, 2.5)  # type: ignore[arg-type]
    assert admin.asked == [(GROUP, 2.5)]
    assert state == GroupState("Stable", [
        MemberInfo("p/1", "oncelog-projector/p%2F1@http://a:1", (0, 2)),
        MemberInfo("old-uuid", "oncelog-projector@http://b:1", (1,)),  # an older version's
    ])  # fmt: skip
    assert state.stable
    assert state.settled


def test_a_rebalancing_group_is_neither_stable_nor_settled() -> None:
    member = Member("m", "oncelog-projector/p", None)  # no assignment while it rebalances
    state = read_group(Admin(Listed(GROUP, "PreparingRebalance", [member])), GROUP, TOPIC, 1)  # type: ignore[arg-type]
    assert state.members == [MemberInfo("p", "oncelog-projector/p", ())]
    assert not state.stable
    assert not state.settled


def test_a_group_nobody_lists_is_dead_and_an_empty_one_settled() -> None:
    assert read_group(Admin(), GROUP, TOPIC, 1) == GroupState("Dead", [])  # type: ignore[arg-type]
    empty = read_group(Admin(Listed(GROUP, "Empty")), GROUP, TOPIC, 1)  # type: ignore[arg-type]
    assert empty.settled
    assert not empty.stable


def test_a_coordinators_error_is_raised() -> None:
    loading = KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS)
    admin = Admin(Listed(GROUP, "", error=loading))
    with pytest.raises(KafkaException):
        read_group(admin, GROUP, TOPIC, 1)  # type: ignore[arg-type]
