"""The topic pair on the real broker: configs, timestamps and compaction."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer, TopicPartition

from oncelog.errors import KafkaOperationError, TopicConfigError
from oncelog.settings import Settings
from oncelog.topics import (
    EXECUTIONS_CONFIG,
    REQUESTS_CONFIG,
    admin_client,
    check_topics,
    create_topics,
    describe_configs,
    ledger_topics,
)

pytestmark = pytest.mark.kafka


def _read_all(
    bootstrap: str, topic: str, timeout_s: float = 20.0
) -> list[tuple[bytes | None, bytes | None]]:
    """Every record of partition 0, read from the start up to the high watermark."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "enable.auto.commit": False}
    )
    tp = TopicPartition(topic, 0, 0)
    _, high = consumer.get_watermark_offsets(tp, timeout=10)
    consumer.assign([tp])
    out: list[tuple[bytes | None, bytes | None]] = []
    deadline = time.monotonic() + timeout_s
    while consumer.position([tp])[0].offset < high and time.monotonic() < deadline:
        for msg in consumer.consume(500, timeout=1.0):
            assert msg.error() is None
            out.append((msg.key(), msg.value()))
    consumer.close()
    return out


def test_create_topics_and_read_configs_back(settings: Settings, bootstrap: str) -> None:
    admin = admin_client(settings, bootstrap)
    specs = ledger_topics(settings, partitions=4, reply_partitions=7)
    assert sorted(create_topics(admin, specs)) == sorted(s.name for s in specs)
    assert create_topics(admin, specs) == []  # idempotent
    # The decisions topic may differ from the sharded three, which must agree.
    expected = {s.name: 4 for s in specs} | {settings.decisions_topic: 7}
    assert check_topics(admin, specs) == expected
    requests = describe_configs(admin, settings.requests_topic)
    executions = describe_configs(admin, settings.executions_topic)
    for key, value in REQUESTS_CONFIG.items():
        assert requests[key] == value
    for key, value in EXECUTIONS_CONFIG.items():
        assert executions[key] == value


def test_check_refuses_compacting_requests_topic(settings: Settings, bootstrap: str) -> None:
    admin = admin_client(settings, bootstrap)
    requests, executions = ledger_topics(settings, partitions=2)[:2]
    bad = type(requests)(requests.name, 2, {**REQUESTS_CONFIG, "cleanup.policy": "compact"})
    create_topics(admin, [bad, executions])
    with pytest.raises(TopicConfigError, match=r"compacts .*cleanup.policy=delete"):
        check_topics(admin, [requests, executions])


def test_check_refuses_non_compacting_executions_and_partition_mismatch(
    settings: Settings, bootstrap: str
) -> None:
    admin = admin_client(settings, bootstrap)
    requests, executions = ledger_topics(settings, partitions=2)[:2]
    bad = type(executions)(executions.name, 3, {**EXECUTIONS_CONFIG, "cleanup.policy": "delete"})
    create_topics(admin, [requests, bad])
    with pytest.raises(TopicConfigError) as info:
        check_topics(admin, [requests, executions])
    assert "does not compact" in str(info.value)
    assert "partition counts differ" in str(info.value)
    assert info.value.code == "topic_config"


def test_check_refuses_missing_topics(settings: Settings, bootstrap: str) -> None:
    with pytest.raises(TopicConfigError, match="does not exist"):
        check_topics(admin_client(settings, bootstrap), ledger_topics(settings))


def test_requests_topic_stamps_log_append_time(settings: Settings, bootstrap: str) -> None:
    admin = admin_client(settings, bootstrap)
    create_topics(admin, ledger_topics(settings, partitions=1))
    producer = Producer({"bootstrap.servers": bootstrap})
    client_ts = 1_000_000  # 1970: the broker must overwrite it
    producer.produce(settings.requests_topic, key=b"k", value=b"v", timestamp=client_ts)
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex})
    consumer.assign([TopicPartition(settings.requests_topic, 0, 0)])
    msgs = consumer.consume(1, timeout=15)
    consumer.close()
    assert len(msgs) == 1
    ts_type, ts = msgs[0].timestamp()
    assert ts_type == TIMESTAMP_LOG_APPEND_TIME
    assert ts > client_ts
    assert abs(ts - time.time() * 1000) < 60_000


def test_compaction_drops_an_older_value_and_keeps_the_newest(
    make_topic: Callable[..., str], bootstrap: str
) -> None:
    topic = make_topic(
        partitions=1,
        config={
            **EXECUTIONS_CONFIG,
            "min.compaction.lag.ms": "0",
            "min.cleanable.dirty.ratio": "0.01",
            "segment.ms": "100",
            "delete.retention.ms": "100",
        },
    )
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, key=b"op-1", value=b"old")
    producer.produce(topic, key=b"op-1", value=b"new")
    assert producer.flush(10) == 0
    deadline = time.monotonic() + 60
    values: list[bytes | None] = [b"old"]
    n = 0
    # Each round writes one filler record so that the active segment rolls and the
    # cleaner has a closed segment to compact; we wait on what the log holds, not on time.
    while b"old" in values and time.monotonic() < deadline:
        n += 1
        producer.produce(topic, key=f"filler-{n}".encode(), value=b"x")
        producer.flush(10)
        values = [v for k, v in _read_all(bootstrap, topic) if k == b"op-1"]
    assert values == [b"new"], f"compaction did not happen within 60s after {n} rounds"


def test_one_broker_gets_single_replica_topics_and_a_larger_factor_is_a_typed_error(
    bootstrap: str,
) -> None:
    admin = admin_client(Settings(bootstrap_servers=bootstrap), bootstrap)
    prefix = f"t-{uuid.uuid4().hex[:8]}"
    settings = Settings(bootstrap_servers=bootstrap, topic_prefix=prefix, partitions=1)
    specs = ledger_topics(settings, reply_partitions=1)
    create_topics(admin, specs[:1])
    meta = admin.list_topics(specs[0].name, timeout=30).topics[specs[0].name]
    assert [len(p.replicas) for p in meta.partitions.values()] == [1]
    with pytest.raises(KafkaOperationError) as info:
        create_topics(admin, specs[1:2], replication=3)
    assert specs[1].name in str(info.value)


def test_topics_create_prints_partitions_and_replication(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner  # noqa: PLC0415

    from oncelog.cli import app  # noqa: PLC0415

    assert settings.bootstrap_servers is not None
    monkeypatch.setenv("ONCELOG_BOOTSTRAP_SERVERS", settings.bootstrap_servers)
    monkeypatch.setenv("ONCELOG_TOPIC_PREFIX", settings.topic_prefix)
    monkeypatch.setenv("ONCELOG_PARTITIONS", "2")
    first = CliRunner().invoke(app, ["topics", "create"])
    assert first.exit_code == 0, first.output
    assert f"created {settings.requests_topic} (2 partitions, replication factor 1)" in first.output
    again = CliRunner().invoke(app, ["topics", "create"])
    assert f"exists  {settings.requests_topic} (2 partitions, replication factor 1)" in again.output


def test_topics_create_names_a_broker_that_does_not_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from oncelog.errors import BrokerUnreachableError  # noqa: PLC0415
    from oncelog.net import free_port  # noqa: PLC0415
    from oncelog.topics import cluster_metadata  # noqa: PLC0415

    address = f"127.0.0.1:{free_port()}"
    admin = admin_client(Settings(bootstrap_servers=address), address)
    with pytest.raises(BrokerUnreachableError) as info:
        cluster_metadata(admin, timeout_s=2.0)
    assert info.value.code == "broker_unreachable"
    assert address in info.value.message
    assert "oncelog broker start" in info.value.message
