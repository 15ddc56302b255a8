"""The retention guard: a requests log that ages out only behind an archive that keeps up."""

from __future__ import annotations

import time

import pytest
from typer.testing import CliRunner

from oncelog.archive.archiver import archive_partition
from oncelog.archive.location import ArchiveLocation
from oncelog.archive.retention import PartitionLag, check_retention, lag_problems
from oncelog.cli import app, topics_cmd
from oncelog.errors import RetentionUnsafeError
from oncelog.settings import Settings
from oncelog.topics import admin_client, describe_configs
from tests.archive import records

HOUR_MS = 3_600_000


def test_a_retention_at_or_under_the_archives_lag_is_a_problem() -> None:
    now = 10 * HOUR_MS
    lags = [
        PartitionLag(0, low=0, high=50, archived_end=50, oldest_unarchived_ms=None),
        PartitionLag(1, low=0, high=50, archived_end=20, oldest_unarchived_ms=now - HOUR_MS),
    ]
    assert lag_problems(lags, "t", HOUR_MS + 1, now) == []
    assert lag_problems(lags, "t", -1, now) == []
    (problem,) = lag_problems(lags, "t", HOUR_MS, now)
    assert problem.startswith(f"t[1]: the archive is {HOUR_MS} ms behind")


def test_records_deleted_unarchived_are_a_problem_whatever_the_retention() -> None:
    lost = PartitionLag(2, low=30, high=50, archived_end=20, oldest_unarchived_ms=None)
    assert lag_problems([lost], "t", -1, 0) == [
        "t[2]: offsets [20, 30) were deleted before they were archived"
    ]


@pytest.mark.kafka
def test_a_finite_retention_needs_an_archive_that_keeps_up(archived: Settings) -> None:
    records.create(archived, partitions=1)
    records.produce(archived, 0, 5)
    kafka = archived.kafka_config(str(archived.bootstrap_servers))
    later = int(time.time() * 1000) + HOUR_MS
    with pytest.raises(RetentionUnsafeError, match="no archive is configured"):
        check_retention(archived.model_copy(update={"archive_url": None}), kafka, HOUR_MS, later)
    check_retention(archived.model_copy(update={"archive_url": None}), kafka, -1, later)
    with pytest.raises(RetentionUnsafeError, match=r"\[0\]: the archive is \d+ ms behind"):
        check_retention(archived, kafka, HOUR_MS, later)
    location = ArchiveLocation.from_settings(archived)
    archive_partition(location, kafka, archived.requests_topic, 0, file_records=100)
    check_retention(archived, kafka, HOUR_MS, later)


@pytest.mark.kafka
def test_topics_create_and_check_guard_the_requests_retention(
    archived: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in {
        "ONCELOG_BOOTSTRAP_SERVERS": str(archived.bootstrap_servers),
        "ONCELOG_TOPIC_PREFIX": archived.topic_prefix,
        "ONCELOG_PARTITIONS": "1",
        "ONCELOG_ARCHIVE_URL": str(archived.archive_url),
        "ONCELOG_ARCHIVE_S3_ENDPOINT": archived.archive_s3_endpoint,
        "ONCELOG_ARCHIVE_S3_ACCESS_KEY": archived.archive_s3_access_key,
        "ONCELOG_ARCHIVE_S3_SECRET_KEY": (
            None
            if archived.archive_s3_secret_key is None
            else archived.archive_s3_secret_key.get_secret_value()
        ),
    }.items():
        if value is not None:
            monkeypatch.setenv(name, value)
    runner = CliRunner()
    assert runner.invoke(app, ["topics", "create"]).exit_code == 0
    records.produce(archived, 0, 5)
    # Two hours from now the archive (empty) lags by two hours: one hour's retention is refused.
    later = int(time.time() * 1000) + 2 * HOUR_MS
    monkeypatch.setattr(topics_cmd, "_now_ms", lambda: later)
    refused = runner.invoke(app, ["topics", "create", "--retention-ms", str(HOUR_MS)])
    assert isinstance(refused.exception, RetentionUnsafeError)
    admin = admin_client(archived, str(archived.bootstrap_servers))
    assert describe_configs(admin, archived.requests_topic)["retention.ms"] == "-1"
    assert runner.invoke(app, ["archive", "run", "--once"]).exit_code == 0
    done = runner.invoke(app, ["topics", "create", "--retention-ms", str(HOUR_MS)])
    assert done.exit_code == 0, done.output
    assert describe_configs(admin, archived.requests_topic)["retention.ms"] == str(HOUR_MS)
    assert runner.invoke(app, ["topics", "check"]).exit_code == 0
    records.produce(archived, 5, 2)  # not archived: two hours old at the frozen clock
    check = runner.invoke(app, ["topics", "check"])
    assert isinstance(check.exception, RetentionUnsafeError), check.output
