"""Where the archive lives: a local directory or an S3-compatible bucket, through one
interface (pyarrow's file systems: already a dependency, S3 built into its wheels, no
extension downloaded at run time as DuckDB's httpfs would be).

A file is visible under its name only when complete: it is written under a temporary name
beside it, then renamed (locally: fsynced, then an atomic rename; on S3: a server-side copy,
which creates the object whole, then the temporary key is deleted). A crash leaves at most a
temporary name, which readers ignore and the next writer removes.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Final

import pyarrow.fs as pafs

from oncelog.errors import ArchiveError
from oncelog.settings import Settings

TEMP_MARK: Final = ".tmp-"

# The AWS SDK inside pyarrow sends uploads as aws-chunked bodies with trailing checksums by
# default; S3-compatible servers often refuse those (no Content-Length). Each archived file's
# SHA-256 is in the manifest and checked on verify, so the transport checksum is not needed.
_CHECKSUM_ENV: Final = {
    "AWS_REQUEST_CHECKSUM_CALCULATION": "when_required",
    "AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required",
}


class ArchiveLocation:
    """An archive root on a file system: atomic puts, reads and listings under it."""

    def __init__(self, fs: pafs.FileSystem, root: str, url: str) -> None:
        self.fs = fs
        self.root = root.rstrip("/")
        self.url = url
        self.local = isinstance(fs, pafs.LocalFileSystem)

    @classmethod
    def from_settings(cls, settings: Settings) -> ArchiveLocation:
        """The location ``ONCELOG_ARCHIVE_URL`` names; ``archive_error`` when it is unset."""
        url = settings.archive_url
        if not url:
            raise ArchiveError(
                "no archive is configured: set ONCELOG_ARCHIVE_URL to a directory or an "
                "s3://bucket/prefix (docs/guides/retention.md)"
            )
        if not url.startswith("s3://"):
            root = Path(url.removeprefix("file://")).expanduser().resolve()
            return cls(pafs.LocalFileSystem(), str(root), url)
        for name, value in _CHECKSUM_ENV.items():
            os.environ.setdefault(name, value)
        endpoint = settings.archive_s3_endpoint
        secret = settings.archive_s3_secret_key
        scheme, _, host = (endpoint or "").rpartition("://")
        fs = pafs.S3FileSystem(
            access_key=settings.archive_s3_access_key,
            secret_key=None if secret is None else secret.get_secret_value(),
            region=settings.archive_s3_region,
            endpoint_override=host or None,
            scheme=scheme or "https",
            request_timeout=30,
            connect_timeout=10,
        )
        return cls(fs, url.removeprefix("s3://"), url)

    def _path(self, relative: str) -> str:
        return f"{self.root}/{relative}"

    def put(self, relative: str, data: bytes) -> None:
        """Write ``data`` at ``relative``, visible only once whole (see the module's doc)."""
        final = self._path(relative)
        temp = f"{final}{TEMP_MARK}{uuid.uuid4().hex}"
        try:
            if self.local:
                _put_local(Path(temp), Path(final), data)
                return
            stream = self.fs.open_output_stream(temp)
            stream.write(data)
            stream.close()
            self.fs.copy_file(temp, final)
            self.fs.delete_file(temp)
        except OSError as exc:
            raise ArchiveError(f"writing {self.url}/{relative} failed: {exc}") from exc

    def get(self, relative: str) -> bytes | None:
        """The bytes at ``relative``, or None when there is no such file."""
        path = self._path(relative)
        try:
            if self.fs.get_file_info(path).type == pafs.FileType.NotFound:
                return None
            with self.fs.open_input_stream(path) as stream:
                data: bytes = stream.readall()
                return data
        except OSError as exc:
            raise ArchiveError(f"reading {self.url}/{relative} failed: {exc}") from exc

    def names(self, folder: str) -> list[str]:
        """The names of the complete files in ``folder`` (temporary names left out), sorted."""
        return sorted(n for n in self.listing(folder) if TEMP_MARK not in n)

    def remove_temporaries(self, folder: str) -> int:
        """Delete what a crashed writer left under temporary names in ``folder``."""
        stale = [n for n in self.listing(folder) if TEMP_MARK in n]
        for name in stale:
            try:
                self.fs.delete_file(self._path(f"{folder}/{name}"))
            except OSError as exc:
                raise ArchiveError(f"removing {self.url}/{folder}/{name} failed: {exc}") from exc
        return len(stale)

    def listing(self, folder: str) -> list[str]:
        """Every file name in ``folder``, temporary ones included."""
        selector = pafs.FileSelector(self._path(folder), allow_not_found=True)
        try:
            infos = self.fs.get_file_info(selector)
        except OSError as exc:
            raise ArchiveError(f"listing {self.url}/{folder} failed: {exc}") from exc
        return [i.base_name for i in infos if i.type == pafs.FileType.File]


def _put_local(temp: Path, final: Path, data: bytes) -> None:
    final.parent.mkdir(parents=True, exist_ok=True)
    with temp.open("wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, final)
    folder = os.open(final.parent, os.O_RDONLY)
    try:
        os.fsync(folder)  # the rename itself survives a power cut
    finally:
        os.close(folder)
