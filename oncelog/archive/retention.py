"""Retention behind the archive: trim the log up to what is archived and verified, and
guard a retention against the archive's lag (docs/guides/retention.md).

The archive's lag on a partition is the age of its oldest record not archived yet (zero
when the archive is at the high watermark). A ``retention.ms`` at or under that lag lets
the broker delete requests before they are archived; it is refused, and ``topics check``
says so while it holds. The compacted topics are never trimmed: only the requests log.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from oncelog.errors import RetentionUnsafeError, TopicMissingError
from oncelog.kafka.failures import kafka_failure
from oncelog.kafka.reader import consume_available, partition_count, plain_consumer
from oncelog.settings import Settings

from .archiver import load_manifest, log_range, verify_partition
from .location import ArchiveLocation

_ADMIN_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class PartitionLag:
    """How far one partition's archive is behind its log."""

    partition: int
    low: int
    high: int
    archived_end: int | None
    oldest_unarchived_ms: int | None

    @property
    def lost(self) -> bool:
        """Whether the log deleted records before they were archived."""
        return self.archived_end is not None and self.archived_end < self.low

    def lag_ms(self, now_ms: int) -> int:
        """The age of the oldest record not archived yet (0: none is)."""
        return (
            0 if self.oldest_unarchived_ms is None else max(0, now_ms - self.oldest_unarchived_ms)
        )


def partition_lag(
    location: ArchiveLocation, kafka: Mapping[str, Any], topic: str, partition: int
) -> PartitionLag:
    """The archive's position on ``topic[partition]`` against the log's, read now."""
    end = load_manifest(location, topic, partition).end_offset
    low, high = log_range(kafka, topic, partition)
    start = low if end is None else max(end, low)
    oldest = _timestamp_at(kafka, topic, partition, start) if start < high else None
    return PartitionLag(partition, low, high, end, oldest)


def _timestamp_at(kafka: Mapping[str, Any], topic: str, partition: int, offset: int) -> int | None:
    """The timestamp of the first record at or after ``offset`` (None: none came)."""
    consumer = plain_consumer(kafka)
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        for msg in consume_available(consumer, 1, 10.0):
            if msg.error() is None:
                stamp: int = msg.timestamp()[1]
                return stamp
        return None
    finally:
        consumer.close()


def lag_problems(lags: list[PartitionLag], topic: str, retention_ms: int, now_ms: int) -> list[str]:
    """Why a ``retention_ms`` (-1: forever) would lose requests not archived yet, if it would."""
    problems = [
        f"{topic}[{lag.partition}]: offsets [{lag.archived_end}, {lag.low}) were deleted "
        "before they were archived"
        for lag in lags
        if lag.lost
    ]
    if retention_ms < 0:
        return problems
    for lag in lags:
        behind = lag.lag_ms(now_ms)
        if behind >= retention_ms:
            problems.append(
                f"{topic}[{lag.partition}]: the archive is {behind} ms behind the log, not under "
                f"retention.ms={retention_ms}: requests would be deleted before they are "
                "archived (run `oncelog archive run`, or keep the log longer)"
            )
    return problems


@dataclass(frozen=True)
class Trimmed:
    """What a trim did to one partition: its log began at ``before``, now at ``after``."""

    partition: int
    before: int
    after: int
    archived_end: int


def trim_partition(
    admin: AdminClient,
    location: ArchiveLocation,
    kafka: Mapping[str, Any],
    topic: str,
    partition: int,
    *,
    upto: int | None = None,
) -> Trimmed:
    """Delete ``topic[partition]``'s records before ``upto`` (default: the archive's end),
    once the archive's files up to there are verified.

    Raises:
        RetentionUnsafeError: ``upto`` is past the archive's end, or the archive does not
            reach back to where the log begins; nothing is deleted.
        ArchiveCorruptError: an archived file in the range differs from its manifest.
    """
    manifest = verify_partition(location, topic, partition, upto)
    end, first = manifest.end_offset, manifest.start_offset
    low, _high = log_range(kafka, topic, partition)
    target = end if upto is None else upto
    where = f"{topic}[{partition}]"
    if end is None or first is None or target is None:
        raise RetentionUnsafeError(f"{where}: nothing is archived, nothing may be trimmed")
    if target > end:
        raise RetentionUnsafeError(
            f"{where}: offsets [{end}, {target}) are not archived; the archive ends at {end}"
        )
    if first > low and target > low:
        raise RetentionUnsafeError(
            f"{where}: offsets [{low}, {first}) are in the log but not in the archive"
        )
    if target > low:
        _delete_records(admin, topic, partition, target)
    return Trimmed(partition, low, max(low, target), end)


def _delete_records(admin: AdminClient, topic: str, partition: int, before: int) -> None:
    futures = admin.delete_records(
        [TopicPartition(topic, partition, before)], operation_timeout=_ADMIN_TIMEOUT_S
    )
    for future in futures.values():
        try:
            future.result(timeout=_ADMIN_TIMEOUT_S)
        except KafkaException as exc:
            raise kafka_failure(
                f"deleting {topic}[{partition}] before {before}", topic, exc
            ) from exc


def topic_lags(
    location: ArchiveLocation, kafka: Mapping[str, Any], topic: str
) -> list[PartitionLag]:
    """The archive's lag on every partition of ``topic`` (none when the topic is missing)."""
    consumer = plain_consumer(kafka)
    try:
        count = partition_count(consumer, topic)
    except TopicMissingError:
        return []
    finally:
        consumer.close()
    return [partition_lag(location, kafka, topic, p) for p in range(count)]


def retention_problems(
    settings: Settings, kafka: Mapping[str, Any], retention_ms: int, now_ms: int
) -> list[str]:
    """Why ``retention_ms`` on the requests log would lose requests not archived yet:
    a finite retention without an archive, a partition whose archive lags by the
    retention or more, or records already deleted unarchived."""
    topic = settings.requests_topic
    if settings.archive_url is None:
        if retention_ms < 0:
            return []
        return [
            f"{topic} has retention.ms={retention_ms} but no archive is configured: set "
            "ONCELOG_ARCHIVE_URL and run `oncelog archive run` (docs/guides/retention.md)"
        ]
    lags = topic_lags(ArchiveLocation.from_settings(settings), kafka, topic)
    return lag_problems(lags, topic, retention_ms, now_ms)


def check_retention(
    settings: Settings, kafka: Mapping[str, Any], retention_ms: int, now_ms: int
) -> None:
    """Refuse a ``retention_ms`` for the requests log that would lose unarchived requests.

    Raises:
        RetentionUnsafeError: the reasons of :func:`retention_problems`.
    """
    problems = retention_problems(settings, kafka, retention_ms, now_ms)
    if problems:
        raise RetentionUnsafeError("; ".join(problems))
