"""How many replicas `oncelog topics create` asks for, by cluster size (no broker needed)."""

from __future__ import annotations

import pytest

from oncelog.topics import replication_for


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
