"""``oncelog.connect()`` finds the broker at the edge; the SDK only uses the configured one."""

from __future__ import annotations

from pathlib import Path

import pytest

import oncelog
from oncelog.errors import BrokerError, ConfigError
from oncelog.producer.client import LedgerClient
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings


def test_connect_keeps_a_configured_broker_and_starts_nothing(tmp_path: Path) -> None:
    settings = Settings(bootstrap_servers="example.invalid:9092", data_dir=tmp_path)
    client = oncelog.connect(settings, worker_id="w-1")
    assert isinstance(client, LedgerClient)
    assert client.settings == settings
    assert client.worker_id == "w-1"
    sync = oncelog.connect_sync(settings)
    assert isinstance(sync, SyncLedgerClient)
    assert sync.settings.bootstrap_servers == "example.invalid:9092"
    assert not (tmp_path / "broker").exists()


def test_connect_without_a_broker_says_how_to_start_one(tmp_path: Path) -> None:
    with pytest.raises(BrokerError, match="oncelog broker start"):
        oncelog.connect(Settings(bootstrap_servers=None, data_dir=tmp_path))


def test_the_sdk_alone_needs_a_configured_broker(tmp_path: Path) -> None:
    client = SyncLedgerClient(Settings(bootstrap_servers=None, data_dir=tmp_path))
    with pytest.raises(ConfigError, match=r"oncelog\.connect\(\)"):
        client.open()
