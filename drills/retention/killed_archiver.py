"""``oncelog archive run --once`` that SIGKILLs itself at a chosen point of its N-th file.

Usage: ``python -m drills.retention.killed_archiver (mid-file|before-manifest) N``.
``mid-file``: half of the N-th file's bytes are written under its temporary name and
synced, then the process dies. ``before-manifest``: the N-th file is complete under its
own name, and the process dies before the manifest lists it. The settings come from the
environment, as for ``oncelog archive run``. The product has no such option: where a
crash lands is the drill's schedule, and only a hook makes it land there every time.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from oncelog.archive import archiver
from oncelog.archive import location as archive_location
from oncelog.archive.location import ArchiveLocation
from oncelog.archive.manifest import Manifest
from oncelog.cli import main

MODULE = "drills.retention.killed_archiver"


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def kill_mid_file(nth: int) -> None:
    """Replace the local writer: its ``nth`` Parquet file is half written, then it dies."""
    put, calls = archive_location._put_local, [0]

    def half_then_die(temp: Path, final: Path, data: bytes) -> None:
        calls[0] += final.suffix == ".parquet"  # a manifest is not a file of records
        if calls[0] < nth or final.suffix != ".parquet":
            put(temp, final, data)
            return
        final.parent.mkdir(parents=True, exist_ok=True)
        with temp.open("wb") as out:
            out.write(data[: len(data) // 2])
            out.flush()
            os.fsync(out.fileno())
        _die()

    archive_location._put_local = half_then_die


def kill_before_manifest(nth: int) -> None:
    """Replace the manifest's save: its ``nth`` call dies instead (the file is in place)."""
    save, calls = archiver.save_manifest, [0]

    def die_before(location: ArchiveLocation, manifest: Manifest) -> None:
        calls[0] += 1
        if calls[0] >= nth:
            _die()
        save(location, manifest)

    archiver.save_manifest = die_before


if __name__ == "__main__":
    point, nth = sys.argv[1], int(sys.argv[2])
    {"mid-file": kill_mid_file, "before-manifest": kill_before_manifest}[point](nth)
    sys.argv = ["oncelog", "archive", "run", "--once"]
    main()
