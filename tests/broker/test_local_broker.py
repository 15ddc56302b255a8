"""The embedded broker: lifecycle, offline restarts, Java checks."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from oncelog.broker import jars
from oncelog.broker.java import find_java, parse_java_version
from oncelog.broker.kraft import pid_alive
from oncelog.broker.local import (
    BrokerInfo,
    LocalBroker,
    RunBroker,
    broker_for_run,
    resolve_bootstrap,
    server_properties,
)
from oncelog.errors import BrokerError, JavaNotFoundError
from oncelog.settings import Settings


def _fake_java(tmp_path: Path, version_line: str) -> Path:
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho '{version_line}' >&2\n")
    java.chmod(0o755)
    return home


def test_too_old_java_names_what_to_install(tmp_path: Path) -> None:
    home = _fake_java(tmp_path, 'openjdk version "11.0.22" 2024-01-16')
    with pytest.raises(JavaNotFoundError) as info:
        find_java(home)
    assert "Java 11" in str(info.value)
    assert "Java 17+" in str(info.value)
    assert "openjdk-17" in str(info.value)
    assert info.value.code == "java_not_found"


def test_missing_java_names_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(JavaNotFoundError, match=r"no `java` on PATH.*Java 17\+"):
        find_java(None)
    with pytest.raises(JavaNotFoundError, match="has no bin/java"):
        find_java(tmp_path / "nowhere")


def test_parse_java_versions() -> None:
    assert parse_java_version('java version "1.8.0_202"') == 8
    assert parse_java_version('openjdk version "17.0.15" 2025-04-15') == 17
    assert parse_java_version('openjdk version "25" 2025-09-16') == 25
    with pytest.raises(JavaNotFoundError):
        parse_java_version("garbage")


def test_java_new_enough_is_accepted(tmp_path: Path) -> None:
    home = _fake_java(tmp_path, 'openjdk version "21.0.1" 2023-10-17')
    assert find_java(home) == home / "bin" / "java"


def test_server_properties_are_single_node_kraft(tmp_path: Path) -> None:
    props = dict(
        line.split("=", 1) for line in server_properties(tmp_path, 1234, 1235).splitlines() if line
    )
    assert props["process.roles"] == "broker,controller"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:1234,CONTROLLER://127.0.0.1:1235"
    assert props["offsets.topic.replication.factor"] == "1"
    assert props["transaction.state.log.replication.factor"] == "1"
    assert props["log.dirs"].startswith(str(tmp_path))


def test_no_broker_without_start_is_a_clear_error(tmp_path: Path) -> None:
    settings = Settings(bootstrap_servers=None, data_dir=tmp_path)
    with pytest.raises(BrokerError, match="oncelog broker start"):
        resolve_bootstrap(settings)


def test_external_bootstrap_starts_nothing(tmp_path: Path) -> None:
    settings = Settings(bootstrap_servers="example.invalid:9092", data_dir=tmp_path)
    assert resolve_bootstrap(settings, start=True) == "example.invalid:9092"
    assert LocalBroker(settings).status() is None
    assert not (tmp_path / "broker").exists()


@pytest.mark.kafka
def test_start_twice_reuses_then_stop_start_works_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if os.environ.get("ONCELOG_BOOTSTRAP_SERVERS"):
        pytest.skip("an external broker is configured; the local broker is not used")
    settings = Settings(bootstrap_servers=None, data_dir=tmp_path)
    broker = LocalBroker(settings)
    first = broker.start()
    try:
        # From here on the jars are cached: a start must not need Maven (the only
        # thing that reaches the network), so hide it.
        monkeypatch.setattr(shutil, "which", lambda name: None if name == "mvn" else _which(name))
        assert jars.ensure_jars(settings.cache_dir).exists()
        again = broker.start()
        assert again.pid == first.pid
        assert again.bootstrap == first.bootstrap
        assert broker.stop() is True
        assert broker.status() is None
        restarted = broker.start()
        assert restarted.pid != first.pid
        assert restarted.bootstrap == first.bootstrap  # ports are kept when free
        assert resolve_bootstrap(settings) == restarted.bootstrap
        assert broker.stop(graceful=False) is True  # SIGKILL: gone, nothing left running
        assert broker.status() is None
        assert not pid_alive(restarted.pid)
    finally:
        broker.stop()
    assert broker.stop() is False


def test_a_run_on_a_configured_broker_starts_and_stops_nothing(tmp_path: Path) -> None:
    settings = Settings(bootstrap_servers="example.invalid:9092", data_dir=tmp_path)
    with broker_for_run(settings) as run:
        assert run == RunBroker("example.invalid:9092", started_here=False)
    assert not (tmp_path / "broker").exists()


def _nested_runs_then_fail(settings: Settings, seen: list[BrokerInfo]) -> None:
    broker = LocalBroker(settings)
    with broker_for_run(settings) as outer:
        assert outer.started_here
        running = broker.status()
        assert running is not None
        seen.append(running)
        with broker_for_run(settings) as inner:  # a second run reuses it ...
            assert inner == RunBroker(outer.bootstrap, started_here=False)
        assert broker.status() == running  # ... and leaves it up on exit
        raise RuntimeError("the run fails")  # the starter stops it all the same


@pytest.mark.kafka
def test_a_run_stops_the_local_broker_only_if_it_started_it(tmp_path: Path) -> None:
    if os.environ.get("ONCELOG_BOOTSTRAP_SERVERS"):
        pytest.skip("an external broker is configured; the local broker is not used")
    settings = Settings(bootstrap_servers=None, data_dir=tmp_path)
    broker = LocalBroker(settings)
    seen: list[BrokerInfo] = []
    try:
        with pytest.raises(RuntimeError, match="the run fails"):
            _nested_runs_then_fail(settings, seen)
        assert broker.status() is None
        with pytest.raises(ProcessLookupError):
            os.kill(seen[0].pid, 0)  # the JVM is gone, not just forgotten
    finally:
        broker.stop()


_which = shutil.which
