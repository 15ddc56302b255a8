"""docker-compose.fleet.yml (3 brokers, 3 projectors) agrees with the code that runs it.

No Docker engine runs here, so the file is checked by reading it: the brokers form one
quorum with replicated internal topics, the topics job is `oncelog topics create` with
three replicas, and the projectors share a group, prefix and partition counts while each
has its own id, DuckDB volume, port and advertised query URL.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from oncelog.settings import Settings

FLEET = Path(__file__).resolve().parent.parent / "docker-compose.fleet.yml"
SHARED = ("ONCELOG_BOOTSTRAP_SERVERS", "ONCELOG_TOPIC_PREFIX", "ONCELOG_PARTITIONS",
          "ONCELOG_REPLY_PARTITIONS")  # fmt: skip


@pytest.fixture(scope="module")
def services() -> dict[str, dict[str, Any]]:
    loaded: dict[str, dict[str, Any]] = yaml.safe_load(FLEET.read_text())["services"]
    return loaded


def _named(services: dict[str, dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    return [s for name, s in sorted(services.items()) if name.startswith(prefix)]


def test_three_kraft_nodes_form_one_quorum_with_replicated_internal_topics(
    services: dict[str, dict[str, Any]],
) -> None:
    brokers = _named(services, "kafka-")
    assert len(brokers) == 3
    envs = [b["environment"] for b in brokers]
    assert sorted(e["KAFKA_NODE_ID"] for e in envs) == ["1", "2", "3"]
    voters = {e["KAFKA_CONTROLLER_QUORUM_VOTERS"] for e in envs}
    assert voters == {"1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093"}
    assert len({e["CLUSTER_ID"] for e in envs}) == 1
    for env in envs:
        assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
        assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "3"
        assert env["KAFKA_MIN_INSYNC_REPLICAS"] == "2"
        assert env["KAFKA_UNCLEAN_LEADER_ELECTION_ENABLE"] == "false"
        node = env["KAFKA_NODE_ID"]
        assert f"INTERNAL://kafka-{node}:9092" in env["KAFKA_ADVERTISED_LISTENERS"]


def test_the_topics_job_is_oncelog_topics_create_with_three_replicas(
    services: dict[str, dict[str, Any]],
) -> None:
    topics = services["topics"]
    assert topics["command"] == ["topics", "create"]
    env = topics["environment"]
    assert env["ONCELOG_REPLICATION_FACTOR"] == "3"
    assert set(topics["depends_on"]) == {"kafka-1", "kafka-2", "kafka-3"}
    for projector in _named(services, "projector-"):
        assert {k: projector["environment"][k] for k in SHARED} == {k: env[k] for k in SHARED}


def test_projectors_share_a_group_and_differ_in_id_storage_port_and_url(
    services: dict[str, dict[str, Any]],
) -> None:
    projectors = _named(services, "projector-")
    assert len(projectors) == 3
    ids = [p["environment"]["ONCELOG_PROJECTOR_ID"] for p in projectors]
    assert len(set(ids)) == 3
    assert len({p["volumes"][0].split(":")[0] for p in projectors}) == 3
    assert len({p["ports"][0].split(":")[0] for p in projectors}) == 3
    for pid, projector in zip(ids, projectors, strict=True):
        env = projector["environment"]
        assert env["ONCELOG_HTTP_ADVERTISED_URL"] == f"http://{pid}:{env['ONCELOG_HTTP_PORT']}"
        assert env["ONCELOG_DB_PATH"].startswith(projector["volumes"][0].split(":")[1])
        # A non-loopback API needs a bearer token; compose refuses to start without one.
        assert env["ONCELOG_HTTP_TOKEN"].startswith("${ONCELOG_HTTP_TOKEN:?")


def test_every_oncelog_variable_is_a_setting_and_valid(
    services: dict[str, dict[str, Any]],
) -> None:
    # Settings ignores unknown variables, so a misspelt one would silently do nothing.
    for name, service in services.items():
        env = {k: v for k, v in service.get("environment", {}).items() if k.startswith("ONCELOG_")}
        unknown = [
            k for k in env if k.removeprefix("ONCELOG_").lower() not in Settings.model_fields
        ]
        assert unknown == [], name
        fields = {k.removeprefix("ONCELOG_").lower(): v for k, v in env.items()}
        fields.pop("http_token", None)
        Settings(**fields, http_token="t" if "http_host" in fields else None)
