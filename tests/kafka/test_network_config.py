"""Every client's librdkafka settings for a bad network, as built (docs/reliability.md)."""

from __future__ import annotations

from oncelog.kafka.producer import DEFAULT_PRODUCER_CONFIG
from oncelog.projector.group_consumer import group_config
from oncelog.projector.publisher import FLUSH_TIMEOUT_S
from oncelog.settings import KAFKA_NETWORK_CONFIG, Settings

NOWHERE = "127.0.0.1:9"


def test_every_client_config_starts_from_the_network_settings() -> None:
    config = Settings(bootstrap_servers=NOWHERE).kafka_config(NOWHERE)
    assert {k: config[k] for k in KAFKA_NETWORK_CONFIG} == dict(KAFKA_NETWORK_CONFIG)
    # The values the drill chose, named: a test that a refactor cannot pass by accident.
    assert config["socket.timeout.ms"] == 10_000  # librdkafka: 60 000
    assert config["socket.connection.setup.timeout.ms"] == 10_000  # 30 000
    assert config["socket.keepalive.enable"] is True  # false
    assert config["reconnect.backoff.ms"] == 100
    assert config["reconnect.backoff.max.ms"] == 1_000  # 10 000


def test_extra_config_overrides_a_network_setting() -> None:
    settings = Settings(bootstrap_servers=NOWHERE, kafka_extra_config={"socket.timeout.ms": 30_000})
    assert settings.kafka_config(NOWHERE)["socket.timeout.ms"] == 30_000


def test_the_projectors_group_settings() -> None:
    config = group_config(Settings(bootstrap_servers=NOWHERE, group_session_timeout_ms=6000))
    # Silent this long (a cut, a blackhole), the projector's partitions go to the others and
    # it stops publishing for them; a third of it between heartbeats.
    assert config["session.timeout.ms"] == 6000
    assert config["heartbeat.interval.ms"] == 2000
    assert config["max.poll.interval.ms"] == 300_000


def test_a_commit_waits_for_publishing_longer_than_any_record_may_take() -> None:
    # Each record is delivered or fails with its own error within message.timeout.ms: a
    # flush bound below it stopped serve on a replication stall it would have outlived.
    assert DEFAULT_PRODUCER_CONFIG["message.timeout.ms"] < FLUSH_TIMEOUT_S * 1000
