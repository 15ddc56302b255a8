"""docker-compose.yml parses and creates the same topics as `oncelog topics create`."""

from __future__ import annotations

import re

from oncelog.settings import Settings
from oncelog.topics import ledger_topics
from tests.conftest import compose_service


def _created_topics() -> dict[str, tuple[int, dict[str, str]]]:
    command = " ".join(compose_service("topics")["command"])
    out: dict[str, tuple[int, dict[str, str]]] = {}
    for part in command.split("&&"):
        topic = re.search(r"--topic (\S+)", part)
        partitions = re.search(r"--partitions (\d+)", part)
        assert topic is not None
        assert partitions is not None
        configs = dict(kv.split("=", 1) for kv in re.findall(r"--config (\S+)", part))
        out[topic.group(1)] = (int(partitions.group(1)), configs)
    return out


def test_compose_topics_match_oncelog_topics_create() -> None:
    specs = ledger_topics(Settings(bootstrap_servers=None))
    created = _created_topics()
    assert set(created) == {s.name for s in specs}
    for spec in specs:
        partitions, configs = created[spec.name]
        assert partitions == spec.partitions
        assert configs == dict(spec.config)
    # The decisions topic has its own count, the reply partitions (ONCELOG_REPLY_PARTITIONS).
    assert created["oncelog.decisions"][0] == Settings(bootstrap_servers=None).reply_partitions


def test_compose_kafka_is_single_node_kraft_with_pinned_image() -> None:
    kafka = compose_service("kafka")
    assert re.fullmatch(r"apache/kafka:\d+\.\d+\.\d+", kafka["image"])
    env = kafka["environment"]
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "1"
    assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == "1"
