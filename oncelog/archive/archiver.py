"""Archive one partition of the requests log: files of records, then the manifest.

A pass reads the partition from where its archive ends up to its high watermark, in files
of ``file_records`` records; each file is written (atomically), then the manifest that
lists it. A crash between the two leaves a complete file the manifest
does not list: the next pass cuts its first file at that file's end, and when the file
holds exactly the log's records there, takes it into the manifest without writing it
again. So a re-run writes nothing twice, and the files depend only on the log.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, cast

import pyarrow as pa
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME, Message, TopicPartition

from oncelog.errors import ArchiveCorruptError, RetentionUnsafeError
from oncelog.kafka.reader import plain_consumer, read_to_end, watermarks

from . import columns
from .location import ArchiveLocation
from .manifest import (
    MANIFEST_NAME,
    FileEntry,
    Manifest,
    Record,
    file_name,
    parse_file_name,
    partition_dir,
    records_digest,
)


@dataclass(frozen=True)
class PassResult:
    """What one pass over a partition did."""

    partition: int
    written: int
    adopted: int
    records: int
    end_offset: int | None


def load_manifest(location: ArchiveLocation, topic: str, partition: int) -> Manifest:
    """The partition's manifest (an empty one when nothing is archived yet)."""
    relative = f"{partition_dir(topic, partition)}/{MANIFEST_NAME}"
    data = location.get(relative)
    if data is None:
        return Manifest(topic, partition)
    return Manifest.from_json(data, f"{location.url}/{relative}")


def save_manifest(location: ArchiveLocation, manifest: Manifest) -> None:
    """Replace the partition's manifest, atomically."""
    folder = partition_dir(manifest.topic, manifest.partition)
    location.put(f"{folder}/{MANIFEST_NAME}", manifest.to_json())


def log_range(kafka: Mapping[str, Any], topic: str, partition: int) -> tuple[int, int]:
    """(low, high) watermarks of one partition, read now."""
    consumer = plain_consumer(kafka)
    try:
        return watermarks(consumer, TopicPartition(topic, partition))
    finally:
        consumer.close()


def _record(msg: Message) -> Record:
    offset = msg.offset()
    assert offset is not None
    return Record(offset, msg.timestamp()[1], msg.key(), msg.value())


def _next_chunk(
    kafka: Mapping[str, Any], topic: str, partition: int, start: int, *, size: int, cut: int | None
) -> list[Record]:
    """Up to ``size`` records from ``start``, ending before ``cut`` when it is given (a file a
    crashed pass wrote). One read per file: each read's timeout bounds one file, never a
    whole backlog."""
    chunk: list[Record] = []
    # A generator: closing it at once closes its consumer, wherever the loop stops.
    reading = cast(Generator[Message], read_to_end(kafka, topic, partition, start))
    with contextlib.closing(reading) as messages:
        for msg in messages:
            record = _record(msg)
            if cut is not None and record.offset >= cut:
                break
            chunk.append(record)
            if len(chunk) >= size:
                break
    return chunk


def archive_partition(
    location: ArchiveLocation,
    kafka: Mapping[str, Any],
    topic: str,
    partition: int,
    *,
    file_records: int,
    flush_before_ms: int | None = None,
) -> PassResult:
    """Archive ``topic[partition]`` up to its high watermark now.

    A last file of fewer than ``file_records`` records is written only when its first
    record is older than ``flush_before_ms`` (None: always, as ``--once`` does).

    Raises:
        RetentionUnsafeError: the log no longer holds where the archive ends (a gap).
        ArchiveError: the location could not be read or written.
    """
    folder = partition_dir(topic, partition)
    location.remove_temporaries(folder)
    manifest = load_manifest(location, topic, partition)
    low, _high = log_range(kafka, topic, partition)
    start = low if manifest.end_offset is None else manifest.end_offset
    if start < low:
        raise RetentionUnsafeError(
            f"{topic}[{partition}]: the archive ends at offset {start} but the log begins at "
            f"{low}: offsets [{start}, {low}) were deleted before they were archived"
        )
    unlisted = {r[0]: r[1] for n in location.names(folder) if (r := parse_file_name(n))}
    cut = unlisted.get(start)
    written = adopted = 0
    while chunk := _next_chunk(kafka, topic, partition, start, size=file_records, cut=cut):
        short = len(chunk) < file_records and cut is None
        if short and flush_before_ms is not None and chunk[0].timestamp_ms >= flush_before_ms:
            break
        entry, reused = store_file(location, partition, folder, start, chunk)
        manifest = manifest.with_file(entry)
        save_manifest(location, manifest)
        written, adopted = written + (not reused), adopted + reused
        start, cut = entry.end_offset, None
        if short:
            break  # the log's end
    return PassResult(partition, written, adopted, manifest.records, manifest.end_offset)


def store_file(
    location: ArchiveLocation, partition: int, folder: str, start: int, chunk: list[Record]
) -> tuple[FileEntry, bool]:
    """Write ``chunk`` as the file of ``[start, last offset + 1)``; True when a file of
    that name already held exactly these records (then nothing is written)."""
    end = chunk[-1].offset + 1
    name = file_name(start, end)
    digest = records_digest(chunk)
    existing = location.get(f"{folder}/{name}")
    reused = existing is not None and _digest_of(existing) == digest
    if existing is not None and reused:
        data = existing
    else:
        data = columns.parquet_bytes(partition, chunk)
        location.put(f"{folder}/{name}", data)
    first, last = chunk[0], chunk[-1]
    entry = FileEntry(
        name=name,
        start_offset=start,
        end_offset=end,
        records=len(chunk),
        first_offset=first.offset,
        last_offset=last.offset,
        first_timestamp_ms=first.timestamp_ms,
        last_timestamp_ms=last.timestamp_ms,
        bytes=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        records_sha256=digest,
    )
    return entry, reused


def _digest_of(data: bytes) -> str | None:
    """The records digest of a file's bytes; None when they are not a readable file."""
    try:
        return records_digest(columns.read_records(data))
    except (pa.ArrowException, KeyError):
        return None


def verify_partition(
    location: ArchiveLocation, topic: str, partition: int, upto: int | None = None
) -> Manifest:
    """Check every file of the partition's manifest (those before ``upto``, when given):
    present, its SHA-256, its records' count, offsets and digest.

    Raises:
        ArchiveCorruptError: the first file that differs, named with what differs.
    """
    manifest = load_manifest(location, topic, partition)
    folder = partition_dir(topic, partition)
    for entry in manifest.files:
        if upto is not None and entry.start_offset >= upto:
            break
        _verify_file(location, folder, entry)
    return manifest


def archived_head(
    location: ArchiveLocation, topic: str, partition: int
) -> tuple[Iterator[Message], int]:
    """The partition's archived records as the log held them, each file checked as
    ``archive verify`` checks it when it is read, and the offset where the log's tail must
    take over (0: nothing archived).

    Raises:
        ArchiveCorruptError: the archive does not begin at offset 0 (records before it are
            in neither place), or a file differs from the manifest (when it is read).
    """
    manifest = load_manifest(location, topic, partition)
    start = manifest.start_offset
    if start not in (None, 0):
        raise ArchiveCorruptError(
            f"the archive of {topic}[{partition}] begins at offset {start}: the records "
            "before it are not archived, so no rebuild can fold them"
        )
    folder = partition_dir(topic, partition)

    def records() -> Iterator[Message]:
        for entry in manifest.files:
            for r in _verify_file(location, folder, entry):
                yield Message(
                    topic=topic,
                    partition=partition,
                    offset=r.offset,
                    key=r.key,
                    value=r.value,
                    timestamp=(TIMESTAMP_LOG_APPEND_TIME, r.timestamp_ms),
                )

    return records(), manifest.end_offset or 0


def _verify_file(location: ArchiveLocation, folder: str, entry: FileEntry) -> list[Record]:
    where = f"{location.url}/{folder}/{entry.name}"
    data = location.get(f"{folder}/{entry.name}")
    if data is None:
        raise ArchiveCorruptError(f"{where} is listed in the manifest but missing")
    if hashlib.sha256(data).hexdigest() != entry.sha256:
        raise ArchiveCorruptError(f"{where}: its SHA-256 differs from the manifest's")
    try:
        records = columns.read_records(data)
    except (pa.ArrowException, KeyError) as exc:
        raise ArchiveCorruptError(f"{where} does not read as Parquet: {exc}") from exc
    seen = (len(records), records[0].offset if records else None, records_digest(records))
    if seen != (entry.records, entry.first_offset, entry.records_sha256):
        raise ArchiveCorruptError(f"{where}: its records differ from the manifest's")
    return records
