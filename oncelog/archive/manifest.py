"""A partition's manifest: which archived files hold which offsets, with their checksums.

One manifest per partition of the requests topic (one archiver per partition writes it):
``<topic>/<partition>/manifest.json`` beside its files. The files cover one contiguous
range of offsets, ``[start_offset, end_offset)``: each file starts where the one before it
ends. A file's range may hold fewer records than offsets (transaction markers); its
``records`` says how many. Readers of the archive (a rebuild from archive + tail, a history
read past the DuckDB window) take the manifest's files and nothing else.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from oncelog.errors import ArchiveCorruptError

FORMAT = 1
MANIFEST_NAME = "manifest.json"


def partition_dir(topic: str, partition: int) -> str:
    """The folder of one partition's files and manifest, relative to the archive's root."""
    return f"{topic}/{partition:05d}"


def file_name(start_offset: int, end_offset: int) -> str:
    """A file's name: its offset range, zero-padded so that names sort as offsets do."""
    return f"{start_offset:020d}-{end_offset:020d}.parquet"


def parse_file_name(name: str) -> tuple[int, int] | None:
    """``(start, end)`` of a file named by :func:`file_name`, or None for any other name."""
    stem, dot, ext = name.partition(".")
    start, dash, end = stem.partition("-")
    if ext != "parquet" or not dash or not dot or not (start.isdigit() and end.isdigit()):
        return None
    return int(start), int(end)


@dataclass(frozen=True)
class Record:
    """One record of the requests log as the archive keeps it: position, time and bytes."""

    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None


def records_digest(records: Iterable[Record]) -> str:
    """SHA-256 over the records' offsets, timestamps, keys and values, in order.

    Independent of the Parquet encoding: what a reader compares with the log itself.
    """
    digest = hashlib.sha256()
    for r in records:
        digest.update(r.offset.to_bytes(8, "big", signed=True))
        digest.update(r.timestamp_ms.to_bytes(8, "big", signed=True))
        for part in (r.key, r.value):
            digest.update(b"\xff" * 4 if part is None else len(part).to_bytes(4, "big"))
            digest.update(part or b"")
    return digest.hexdigest()


@dataclass(frozen=True)
class FileEntry:
    """One archived file: its range, its records and the checksums that verify it."""

    name: str
    start_offset: int
    end_offset: int
    records: int
    first_offset: int
    last_offset: int
    first_timestamp_ms: int
    last_timestamp_ms: int
    bytes: int
    sha256: str
    records_sha256: str


@dataclass(frozen=True)
class Manifest:
    """The archived files of one partition, in offset order."""

    topic: str
    partition: int
    files: tuple[FileEntry, ...] = field(default=())

    @property
    def start_offset(self) -> int | None:
        """The first offset the archive covers (None: nothing archived yet)."""
        return self.files[0].start_offset if self.files else None

    @property
    def end_offset(self) -> int | None:
        """The offset after the archived range: where the next file starts."""
        return self.files[-1].end_offset if self.files else None

    @property
    def records(self) -> int:
        """The records archived, all files together."""
        return sum(f.records for f in self.files)

    def with_file(self, entry: FileEntry) -> Manifest:
        """This manifest and ``entry`` after its last file (it must start where that ends)."""
        end = self.end_offset
        if end is not None and entry.start_offset != end:
            raise ArchiveCorruptError(
                f"{entry.name} starts at {entry.start_offset}, the archive of "
                f"{self.topic}[{self.partition}] ends at {end}"
            )
        return replace(self, files=(*self.files, entry))

    def to_json(self) -> bytes:
        """The manifest's JSON document (sorted keys: the same manifest, the same bytes)."""
        doc = {
            "format": FORMAT,
            "topic": self.topic,
            "partition": self.partition,
            "start_offset": self.start_offset,
            "end_offset": self.end_offset,
            "records": self.records,
            "files": [asdict(f) for f in self.files],
        }
        return json.dumps(doc, sort_keys=True, indent=1).encode()

    @classmethod
    def from_json(cls, data: bytes, where: str) -> Manifest:
        """Read a manifest; a document that is not one raises ``archive_corrupt``."""
        try:
            doc: dict[str, Any] = json.loads(data)
            if doc.get("format") != FORMAT:
                raise ValueError(f"format {doc.get('format')!r}, this version reads {FORMAT}")
            files = tuple(FileEntry(**f) for f in doc["files"])
            manifest = cls(str(doc["topic"]), int(doc["partition"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise ArchiveCorruptError(f"{where} is not an archive manifest: {exc}") from exc
        for entry in files:
            manifest = manifest.with_file(entry)
        return manifest
