"""The archive of the requests log on the real broker, in a directory and on a real
S3-compatible server: files and manifest, atomic visibility under SIGKILL, idempotent
re-runs, checksums verified, trims behind the archive only."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from confluent_kafka import TopicPartition

from oncelog.archive.archiver import (
    archive_partition,
    load_manifest,
    log_range,
    store_file,
    verify_partition,
)
from oncelog.archive.location import ArchiveLocation
from oncelog.archive.manifest import MANIFEST_NAME, Record, partition_dir
from oncelog.archive.retention import trim_partition
from oncelog.errors import ArchiveCorruptError, RetentionUnsafeError
from oncelog.kafka.reader import read_to_end
from oncelog.settings import Settings
from oncelog.topics import admin_client
from oncelog.waiting import poll_until
from tests.archive import records

pytestmark = pytest.mark.kafka


def _archive(settings: Settings, partition: int = 0, size: int = 10) -> tuple[int, int]:
    """One ``--once`` pass; (files written, files taken over)."""
    result = archive_partition(
        ArchiveLocation.from_settings(settings),
        settings.kafka_config(str(settings.bootstrap_servers)),
        settings.requests_topic,
        partition,
        file_records=size,
    )
    return result.written, result.adopted


def _folder(settings: Settings, partition: int = 0) -> str:
    return partition_dir(settings.requests_topic, partition)


def test_files_per_offset_range_hold_the_log_and_its_columns(
    archived: Settings, tmp_path: Path
) -> None:
    records.create(archived)
    values = records.produce(archived, 0, 25)
    assert _archive(archived) == (3, 0)
    location = ArchiveLocation.from_settings(archived)
    manifest = load_manifest(location, archived.requests_topic, 0)
    assert [(f.start_offset, f.end_offset, f.records) for f in manifest.files] == [
        (0, 10, 10),
        (10, 20, 10),
        (20, 25, 5),
    ]
    assert location.names(_folder(archived)) == [f.name for f in manifest.files] + [MANIFEST_NAME]
    # DuckDB reads the files as they are: the raw bytes and the decoded columns.
    for entry in manifest.files:
        data = location.get(f"{_folder(archived)}/{entry.name}")
        assert data is not None
        (tmp_path / entry.name).write_bytes(data)
    rows = (
        duckdb.connect()
        .execute(
            f"SELECT value, body.Claim.tool_name FROM '{tmp_path}/*.parquet' ORDER BY \"offset\""
        )
        .fetchall()
    )
    assert rows == [(v, f"tool-{i}") for i, v in enumerate(values)]


def test_a_re_run_writes_nothing_twice_and_goes_on_where_it_ended(archived: Settings) -> None:
    records.create(archived)
    records.produce(archived, 0, 12)
    assert _archive(archived) == (2, 0)
    location = ArchiveLocation.from_settings(archived)
    before = location.get(f"{_folder(archived)}/{MANIFEST_NAME}")
    assert _archive(archived) == (0, 0)
    assert location.get(f"{_folder(archived)}/{MANIFEST_NAME}") == before
    records.produce(archived, 12, 3)
    assert _archive(archived) == (1, 0)
    manifest = load_manifest(location, archived.requests_topic, 0)
    assert [(f.start_offset, f.end_offset) for f in manifest.files] == [(0, 10), (10, 12), (12, 15)]


def test_a_file_written_before_a_crash_is_taken_over_not_written_again(
    archived: Settings,
) -> None:
    """The crash between a file and its manifest: the next pass finds the file, checks its
    records against the log, and lists it as it is, even cut where the log then ended."""
    records.create(archived)
    records.produce(archived, 0, 4)
    location = ArchiveLocation.from_settings(archived)
    kafka = archived.kafka_config(str(archived.bootstrap_servers))
    logged = [
        Record(m.offset() or 0, m.timestamp()[1], m.key(), m.value())
        for m in read_to_end(kafka, archived.requests_topic, 0)
    ]
    store_file(location, 0, _folder(archived), 0, logged)  # the manifest never written
    records.produce(archived, 4, 3)
    assert _archive(archived) == (1, 1)
    manifest = load_manifest(location, archived.requests_topic, 0)
    assert [(f.start_offset, f.end_offset) for f in manifest.files] == [(0, 4), (4, 7)]


def test_sigkill_mid_file_leaves_no_partial_file_and_a_re_run_completes(
    archived: Settings, tmp_path: Path
) -> None:
    records.create(archived, partitions=1)
    records.produce(archived, 0, 25)
    ready = tmp_path / "stalled"
    env = {**os.environ, **_environment(archived), "ONCELOG_ARCHIVE_FILE_RECORDS": "10"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.archive.stalled_archiver", str(ready)], env=env
    )
    try:
        assert poll_until_exists(ready, proc), "the archiver never reached its second file"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    location = ArchiveLocation.from_settings(archived)
    first = "00000000000000000000-00000000000000000010.parquet"
    assert location.names(_folder(archived)) == [first, MANIFEST_NAME]
    assert load_manifest(location, archived.requests_topic, 0).end_offset == 10
    if location.local:  # on S3 the unfinished upload is no object at all
        assert any(".tmp-" in n for n in location.listing(_folder(archived)))
    assert _archive(archived) == (2, 0)
    manifest = verify_partition(location, archived.requests_topic, 0)
    assert (manifest.end_offset, manifest.records) == (25, 25)
    everything = location.listing(_folder(archived))
    assert sorted(everything) == [f.name for f in manifest.files] + [MANIFEST_NAME]  # no leftovers


def poll_until_exists(path: Path, proc: subprocess.Popen[bytes]) -> bool:
    """Whether ``path`` appears before ``proc`` exits or 60 s pass."""
    poll_until(time.monotonic() + 60, lambda: path.exists() or proc.poll() is not None)
    return path.exists()


def _environment(settings: Settings) -> dict[str, str]:
    secret = settings.archive_s3_secret_key
    values = {
        "ONCELOG_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "ONCELOG_TOPIC_PREFIX": settings.topic_prefix,
        "ONCELOG_ARCHIVE_URL": settings.archive_url,
        "ONCELOG_ARCHIVE_S3_ENDPOINT": settings.archive_s3_endpoint,
        "ONCELOG_ARCHIVE_S3_ACCESS_KEY": settings.archive_s3_access_key,
        "ONCELOG_ARCHIVE_S3_SECRET_KEY": None if secret is None else secret.get_secret_value(),
    }
    return {k: v for k, v in values.items() if v is not None}


def test_verify_finds_a_changed_or_missing_file(archived: Settings) -> None:
    records.create(archived)
    records.produce(archived, 0, 15)
    _archive(archived)
    location = ArchiveLocation.from_settings(archived)
    manifest = verify_partition(location, archived.requests_topic, 0)
    second = f"{_folder(archived)}/{manifest.files[1].name}"
    data = location.get(second)
    assert data is not None
    location.put(second, data[:100] + bytes([data[100] ^ 1]) + data[101:])
    with pytest.raises(ArchiveCorruptError, match="SHA-256 differs"):
        verify_partition(location, archived.requests_topic, 0)
    verify_partition(location, archived.requests_topic, 0, upto=10)  # the first one is sound
    location.fs.delete_file(f"{location.root}/{second}")
    with pytest.raises(ArchiveCorruptError, match="missing"):
        verify_partition(location, archived.requests_topic, 0)


def test_trim_deletes_only_what_is_archived_and_verified(archived: Settings) -> None:
    records.create(archived)
    records.produce(archived, 0, 15)
    assert _archive(archived, size=10) == (2, 0)
    records.produce(archived, 15, 5)  # not archived
    location = ArchiveLocation.from_settings(archived)
    kafka = archived.kafka_config(str(archived.bootstrap_servers))
    admin = admin_client(archived, str(archived.bootstrap_servers))
    topic = archived.requests_topic
    with pytest.raises(RetentionUnsafeError, match=r"offsets \[15, 18\) are not archived"):
        trim_partition(admin, location, kafka, topic, 0, upto=18)
    with pytest.raises(RetentionUnsafeError, match="nothing is archived"):
        trim_partition(admin, location, kafka, topic, 1)
    done = trim_partition(admin, location, kafka, topic, 0)
    assert (done.before, done.after, done.archived_end) == (0, 15, 15)
    assert log_range(kafka, topic, 0) == (15, 20)


def test_trim_refuses_behind_a_corrupt_file(archived: Settings) -> None:
    records.create(archived)
    records.produce(archived, 0, 15)
    _archive(archived)
    location = ArchiveLocation.from_settings(archived)
    manifest = load_manifest(location, archived.requests_topic, 0)
    location.put(f"{_folder(archived)}/{manifest.files[0].name}", b"PAR1 not the file")
    kafka = archived.kafka_config(str(archived.bootstrap_servers))
    admin = admin_client(archived, str(archived.bootstrap_servers))
    with pytest.raises(ArchiveCorruptError):
        trim_partition(admin, location, kafka, archived.requests_topic, 0)
    assert log_range(kafka, archived.requests_topic, 0) == (0, 15)


def test_records_deleted_before_they_were_archived_stop_the_archiver(archived: Settings) -> None:
    records.create(archived)
    records.produce(archived, 0, 15)
    _archive(archived, size=10)
    records.produce(archived, 15, 5)
    admin = admin_client(archived, str(archived.bootstrap_servers))
    tp = TopicPartition(archived.requests_topic, 0, 18)
    for future in admin.delete_records([tp]).values():
        future.result(timeout=30)
    with pytest.raises(RetentionUnsafeError, match=r"offsets \[15, 18\) were deleted"):
        _archive(archived)


def test_a_short_last_file_waits_until_its_first_record_is_old_enough(archived: Settings) -> None:
    """The running archiver's rule: full files at once, a smaller one only once its oldest
    record is older than the flush time (ONCELOG_ARCHIVE_MAX_AGE_S before now)."""
    records.create(archived)
    records.produce(archived, 0, 12)
    location = ArchiveLocation.from_settings(archived)
    kafka = archived.kafka_config(str(archived.bootstrap_servers))
    topic = archived.requests_topic

    def archive(flush_before_ms: int) -> int | None:
        result = archive_partition(
            location, kafka, topic, 0, file_records=10, flush_before_ms=flush_before_ms
        )
        return result.end_offset

    assert archive(flush_before_ms=0) == 10  # the last two are newer than the flush time
    assert archive(flush_before_ms=int(time.time() * 1000) + 60_000) == 12
