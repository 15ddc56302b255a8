"""``oncelog archive run | verify | trim`` as a user runs them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from oncelog.archive.archiver import load_manifest, log_range
from oncelog.archive.location import ArchiveLocation
from oncelog.cli import app
from oncelog.errors import ArchiveCorruptError, ArchiveError, InvalidArgumentError
from oncelog.settings import Settings
from oncelog.waiting import poll_until
from tests.archive import records

pytestmark = pytest.mark.kafka


def _point_cli_at(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONCELOG_BOOTSTRAP_SERVERS", str(settings.bootstrap_servers))
    monkeypatch.setenv("ONCELOG_TOPIC_PREFIX", settings.topic_prefix)
    monkeypatch.setenv("ONCELOG_ARCHIVE_FILE_RECORDS", "4")
    if settings.archive_url is not None:
        monkeypatch.setenv("ONCELOG_ARCHIVE_URL", settings.archive_url)


def test_run_verify_and_trim_from_the_command_line(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archived = settings.model_copy(update={"archive_url": f"{tmp_path}/archive"})
    records.create(archived, partitions=2)
    records.produce(archived, 0, 6, partition=0)
    records.produce(archived, 6, 3, partition=1)
    _point_cli_at(archived, monkeypatch)
    runner = CliRunner()
    ran = runner.invoke(app, ["archive", "run", "--once", "--json"])
    assert ran.exit_code == 0, ran.output
    passes = {p["partition"]: (p["written"], p["end_offset"]) for p in json.loads(ran.output)}
    assert passes == {0: (2, 6), 1: (1, 3)}
    verified = runner.invoke(app, ["archive", "verify"])
    assert verified.output.strip() == "archive OK: 3 files, 9 records"
    upto = runner.invoke(app, ["archive", "trim", "--upto", "2"])
    assert isinstance(upto.exception, InvalidArgumentError)
    trimmed = runner.invoke(app, ["archive", "trim", "--partition", "0", "--upto", "4"])
    assert trimmed.exit_code == 0, trimmed.output
    assert (
        log_range(
            archived.kafka_config(str(archived.bootstrap_servers)), archived.requests_topic, 0
        )[0]
        == 4
    )
    folder = tmp_path / "archive" / archived.requests_topic / "00001"
    (first,) = folder.glob("0*.parquet")
    first.write_bytes(first.read_bytes()[:-9] + b"corrupted")
    broken = runner.invoke(app, ["archive", "verify"])
    assert isinstance(broken.exception, ArchiveCorruptError)
    assert "00001" in str(broken.exception)


def test_without_an_archive_the_commands_say_how_to_configure_one(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    _point_cli_at(settings, monkeypatch)
    ran = CliRunner().invoke(app, ["archive", "run", "--once"])
    assert isinstance(ran.exception, ArchiveError)
    assert "ONCELOG_ARCHIVE_URL" in str(ran.exception)


def test_the_running_archiver_follows_the_log_and_stops_on_sigterm(
    settings: Settings, tmp_path: Path
) -> None:
    archived = settings.model_copy(update={"archive_url": f"{tmp_path}/archive"})
    records.create(archived, partitions=1)
    records.produce(archived, 0, 3)
    env = {
        **os.environ,
        "ONCELOG_BOOTSTRAP_SERVERS": str(archived.bootstrap_servers),
        "ONCELOG_TOPIC_PREFIX": archived.topic_prefix,
        "ONCELOG_ARCHIVE_URL": str(archived.archive_url),
        "ONCELOG_ARCHIVE_MAX_AGE_S": "0.2",
    }
    command = [sys.executable, "-m", "oncelog", "archive", "run", "--interval", "0.2"]
    proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL)
    location = ArchiveLocation.from_settings(archived)

    def archived_to(end: int) -> bool:
        return load_manifest(location, archived.requests_topic, 0).end_offset == end

    try:
        assert poll_until(time.monotonic() + 60, lambda: archived_to(3))
        records.produce(archived, 3, 2)
        assert poll_until(time.monotonic() + 60, lambda: archived_to(5))
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
    assert code == 0
