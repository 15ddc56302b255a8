"""The local three-node KRaft cluster: its configuration, topics with three replicas, a
leader kill under a working client, and the CLI that starts, shows and stops it."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from typer.testing import CliRunner

from drills.faults.probe import channel_on
from oncelog.broker.cluster import (
    ClusterInfo,
    LocalCluster,
    busiest_leader,
    leaders,
    wait_in_sync,
    wait_topics_known,
)
from oncelog.broker.kraft import Quorum, new_cluster_id, server_properties
from oncelog.cli import app
from oncelog.errors import BrokerError, TopicConfigError
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.store import Store
from oncelog.settings import Settings
from oncelog.topics import (
    TopicSpec,
    admin_client,
    check_topics,
    create_topics,
    describe_configs,
    ledger_topics,
)
from tests.integration.conftest import start_projector

runner = CliRunner()

# One cluster for the module: under `make test` (pytest-xdist, --dist loadgroup) the tests
# that use it run on one worker, in this order (the last one stops it).


def _props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def test_a_cluster_node_names_every_voter_and_replicates_internal_topics(tmp_path: Path) -> None:
    voters = "1@127.0.0.1:9001,2@127.0.0.1:9002,3@127.0.0.1:9003"
    props = _props(server_properties(tmp_path, 9102, 9002, None, Quorum(2, voters, 3)))
    assert props["node.id"] == "2"
    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == voters
    assert props["offsets.topic.replication.factor"] == "3"
    assert props["transaction.state.log.min.isr"] == "2"
    assert props["default.replication.factor"] == "3"
    assert props["min.insync.replicas"] == "2"
    assert props["unclean.leader.election.enable"] == "false"


def test_the_single_node_keeps_one_replica_and_no_cluster_settings(tmp_path: Path) -> None:
    props = _props(server_properties(tmp_path, 1234, 1235))
    assert props["controller.quorum.voters"] == "1@127.0.0.1:1235"
    assert props["offsets.topic.replication.factor"] == "1"
    assert "min.insync.replicas" not in props
    assert "default.replication.factor" not in props


def test_cluster_ids_are_kafka_uuids() -> None:
    ids = {new_cluster_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 22 and "=" not in i for i in ids)


def test_a_cluster_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    # 0xF8 encodes as "-" first: the storage tool would take the id for an option.
    draws = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x01" * 16)])
    monkeypatch.setattr(uuid, "uuid4", lambda: next(draws))
    assert new_cluster_id() == "AQEBAQEBAQEBAQEBAQEBAQ"


@pytest.mark.parametrize("nodes", [1, 2])
def test_a_cluster_of_fewer_than_three_is_refused(tmp_path: Path, nodes: int) -> None:
    with pytest.raises(BrokerError, match="three nodes or more"):
        LocalCluster(Settings(bootstrap_servers=None, data_dir=tmp_path), nodes=nodes)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LocalCluster, ClusterInfo]]:
    """A three-node cluster of this module's own, stopped afterwards."""
    if os.environ.get("ONCELOG_BOOTSTRAP_SERVERS"):
        pytest.skip("an external broker is configured; the local cluster is not used")
    data = tmp_path_factory.mktemp("cluster")
    local = LocalCluster(Settings(bootstrap_servers=None, data_dir=data))
    info = local.start()
    print(f"\nlocal cluster {info.bootstrap} started in {info.started_in_s:.1f}s")
    try:
        yield local, info
    finally:
        local.stop()


def _topics_on(
    info: ClusterInfo, tmp_path: Path, prefix: str, replication: int | None = None
) -> tuple[Settings, AdminClient, list[TopicSpec]]:
    """The ledger's topics under ``prefix``, created and known to every node."""
    settings = Settings(bootstrap_servers=info.bootstrap, topic_prefix=prefix, partitions=3,
                        db_path=tmp_path / "ledger.duckdb")  # fmt: skip
    admin = admin_client(settings, info.bootstrap)
    specs = ledger_topics(settings)
    create_topics(admin, specs, replication)
    wait_topics_known(info, [s.name for s in specs])
    return settings, admin, specs


@pytest.mark.kafka
@pytest.mark.xdist_group("local-cluster")
def test_topics_on_three_nodes_get_three_replicas_two_in_sync(
    cluster: tuple[LocalCluster, ClusterInfo], tmp_path: Path
) -> None:
    _, admin, specs = _topics_on(cluster[1], tmp_path, "rf3")
    topics = admin.list_topics(timeout=10).topics
    for spec in specs:
        assert {len(p.replicas) for p in topics[spec.name].partitions.values()} == {3}
        assert describe_configs(admin, spec.name)["min.insync.replicas"] == "2"
    assert set(check_topics(admin, specs)) == {s.name for s in specs}


@pytest.mark.kafka
@pytest.mark.xdist_group("local-cluster")
def test_check_refuses_single_replica_topics_on_three_nodes(
    cluster: tuple[LocalCluster, ClusterInfo], tmp_path: Path
) -> None:
    _, admin, specs = _topics_on(cluster[1], tmp_path, "rf1", replication=1)
    with pytest.raises(TopicConfigError, match=r"1 replica\(s\); a cluster of 3 brokers takes 3"):
        check_topics(admin, specs)
    assert set(check_topics(admin, specs, replication=1)) == {s.name for s in specs}  # accepted


@pytest.mark.kafka
@pytest.mark.xdist_group("local-cluster")
def test_a_client_keeps_working_across_a_leader_kill(
    cluster: tuple[LocalCluster, ClusterInfo], tmp_path: Path
) -> None:
    local, info = cluster
    settings, admin, _ = _topics_on(info, tmp_path, "kill")
    patient = Timeouts(total_s=60.0, resend_after_s=2.0)  # longer than a failover
    with Store(settings.db_path) as store:
        running = start_projector(settings, store)
        try:
            with SyncLedgerClient(settings, worker_id="w", timeouts=patient) as client:
                victim = busiest_leader(admin, settings.requests_topic)
                led = [p for p, n in leaders(admin, settings.requests_topic).items() if n == victim]
                channel = channel_on(led[0], settings.partitions)  # its requests: the victim's
                before = client.claim_execution(channel, "before", tool_name="t", params={})
                local.kill(victim)
                # The same client, no restart: the next calls go to the new leader.
                for key in ("after-1", "after-2"):
                    claim = client.claim_execution(channel, key, tool_name="t", params={})
                    assert claim.status == "claimed"
                    client.complete_execution(claim.execution, claim.claim_token, {"k": key})
                assert leaders(admin, settings.requests_topic)[led[0]] not in (victim, -1)
                done = client.complete_execution(before.execution, before.claim_token, {})
                assert done.status == "completed"
        finally:
            running.halt()
    local.start_nodes(victim)
    wait_in_sync(admin)  # every replica back in sync everywhere (bounded)


@pytest.mark.kafka
@pytest.mark.xdist_group("local-cluster")
def test_the_cli_shows_and_stops_the_cluster(
    cluster: tuple[LocalCluster, ClusterInfo], monkeypatch: pytest.MonkeyPatch
) -> None:
    local, info = cluster
    monkeypatch.setenv("ONCELOG_DATA_DIR", str(local.dir.parent))
    monkeypatch.delenv("ONCELOG_BOOTSTRAP_SERVERS", raising=False)
    shown = runner.invoke(app, ["broker", "status"])
    assert shown.exit_code == 0, shown.output
    assert f"{info.bootstrap} (3 of 3 running)" in shown.output
    assert shown.output.count("  node ") == 3
    single = runner.invoke(app, ["broker", "start"])  # one local broker at a time
    assert single.exit_code != 0
    assert "the local cluster runs" in str(single.exception)
    stopped = runner.invoke(app, ["broker", "stop"])
    assert stopped.output.strip() == "stopped"
    assert local.status() is None
    assert runner.invoke(app, ["broker", "status"]).exit_code == 1
