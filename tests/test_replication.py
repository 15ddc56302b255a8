"""How many replicas `oncelog topics create` asks for, by cluster size (no broker needed)."""

from __future__ import annotations

import pytest

from oncelog.topics import replication_for, replication_problems


@pytest.mark.parametrize("brokers", [1, 2])
def test_a_small_cluster_gets_one_replica_and_no_isr_floor(brokers: int) -> None:
    assert replication_for(brokers) == (1, {})


@pytest.mark.parametrize("brokers", [3, 5, 9])
def test_three_brokers_or_more_get_three_replicas_two_in_sync(brokers: int) -> None:
    assert replication_for(brokers) == (3, {"min.insync.replicas": "2"})


def test_the_setting_wins_over_the_broker_count() -> None:
    # A deployment that starts its topics job before every broker has registered must
    # not get single-replica topics: ONCELOG_REPLICATION_FACTOR=3 asks for three anyway.
    assert replication_for(1, 3) == (3, {"min.insync.replicas": "2"})
    assert replication_for(5, 1) == (1, {})
    assert replication_for(5, 5) == (5, {"min.insync.replicas": "4"})


def test_fewer_replicas_than_the_cluster_takes_is_a_problem() -> None:
    (problem,) = replication_problems("t.requests", 1, 1, brokers=3)
    assert "t.requests has 1 replica(s); a cluster of 3 brokers takes 3" in problem
    assert "ONCELOG_REPLICATION_FACTOR=1" in problem
    assert replication_problems("t.requests", 1, 1, brokers=3, wanted=1) == []


def test_three_replicas_need_two_in_sync() -> None:
    (problem,) = replication_problems("t.requests", 3, 1, brokers=3)
    assert "min.insync.replicas=1" in problem
    assert replication_problems("t.requests", 3, 2, brokers=3) == []


def test_a_broker_down_is_not_a_topic_problem() -> None:
    # Two live brokers of three: the metadata counts two, the topics keep three replicas.
    assert replication_problems("t.requests", 3, 2, brokers=2) == []
    assert replication_problems("t.requests", 1, 1, brokers=1) == []
