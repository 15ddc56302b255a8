"""Every producer of the ledger acknowledges only what the in-sync replicas hold, idempotently."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from oncelog.errors import ConfigError
from oncelog.kafka import producer as producer_module
from oncelog.kafka.producer import FutureProducer, producer_config
from oncelog.producer.dispatch import BATCH_LINGER_MS, Dispatcher, Timeouts
from oncelog.projector.service import PUBLISH_LINGER_MS, Projector
from oncelog.projector.store import Store
from oncelog.settings import Settings

NOWHERE = "127.0.0.1:9"  # nothing is contacted: producers connect at their first send


def test_the_defaults_are_acks_all_and_idempotent() -> None:
    config = producer_config({"bootstrap.servers": NOWHERE})
    assert config["acks"] == "all"
    assert config["enable.idempotence"] is True


@pytest.mark.parametrize(
    "weaker",
    [{"acks": "1"}, {"acks": 0}, {"request.required.acks": "1"}, {"enable.idempotence": False},
     {"enable.idempotence": "false"}],
)  # fmt: skip
def test_a_weaker_producer_is_refused(weaker: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match=r"acks=all and enable\.idempotence=true"):
        producer_config({"bootstrap.servers": NOWHERE}, weaker)


def test_acks_minus_one_is_all() -> None:
    assert producer_config({"bootstrap.servers": NOWHERE}, {"acks": -1})["acks"] == -1


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[FutureProducer]:
    """Every FutureProducer built while the test runs."""
    made: list[FutureProducer] = []
    original = FutureProducer.__init__

    def record(self: FutureProducer, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(producer_module.FutureProducer, "__init__", record)
    return made


def _client_and_projector(tmp_path: Path) -> None:
    """Build an SDK client's transport and a projector: four producers, none connected."""
    settings = Settings(bootstrap_servers=NOWHERE, db_path=tmp_path / "p.duckdb")
    Dispatcher(settings, NOWHERE, Timeouts())
    with Store(settings.db_path) as store:
        Projector(settings, NOWHERE, store)


def test_the_clients_and_the_projectors_producers_are_durable(
    built: list[FutureProducer], tmp_path: Path
) -> None:
    _client_and_projector(tmp_path)
    # The client's two lanes of requests, the projector's two of decisions and snapshots.
    assert len(built) == 4
    for made in built:
        assert made.config["acks"] == "all"
        assert made.config["enable.idempotence"] is True
        # One request in flight: concurrent sends batch in the next request.
        assert made.config["max.in.flight.requests.per.connection"] == 1
    # A lone call leaves at once; concurrent ones linger to share requests; decisions a little.
    lingers = [made.config["linger.ms"] for made in built]
    assert lingers == [0, BATCH_LINGER_MS, 0, PUBLISH_LINGER_MS]


def test_a_configured_linger_wins_over_the_built_in_ones(built: list[FutureProducer]) -> None:
    settings = Settings(bootstrap_servers=NOWHERE, kafka_extra_config={"linger.ms": 7})
    Dispatcher(settings, NOWHERE, Timeouts())
    assert [made.config["linger.ms"] for made in built] == [7, 7]


def test_extra_config_cannot_weaken_the_clients_producer() -> None:
    settings = Settings(bootstrap_servers=NOWHERE, kafka_extra_config={"acks": "1"})
    with pytest.raises(ConfigError, match="ONCELOG_KAFKA_EXTRA_CONFIG"):
        Dispatcher(settings, NOWHERE, Timeouts())


def test_extra_config_may_allow_more_requests_in_flight() -> None:
    # Throughput tuning, not durability: idempotence keeps order with up to 5 in flight.
    extra = {"max.in.flight.requests.per.connection": 5}
    assert (
        producer_config({"bootstrap.servers": NOWHERE}, extra)[
            "max.in.flight.requests.per.connection"
        ]
        == 5
    )


def test_every_producer_meets_a_bad_network_with_the_chosen_settings(
    built: list[FutureProducer], tmp_path: Path
) -> None:
    # The network drill's findings (docs/reliability.md, "Network faults"): a half-open
    # connection costs socket.timeout.ms, a healed cut at most reconnect.backoff.max.ms.
    _client_and_projector(tmp_path)
    assert len(built) == 4
    for made in built:
        assert made.config["socket.timeout.ms"] == 10_000
        assert made.config["socket.connection.setup.timeout.ms"] == 10_000
        assert made.config["socket.keepalive.enable"] is True
        assert made.config["reconnect.backoff.max.ms"] == 1_000
