"""``oncelog archive run --once`` that stalls half-way through writing its second file, for
the SIGKILL test: it writes half the file's bytes where the real writer does (a temporary
file, or an S3 upload), creates the file named by its first argument, then waits for the
test to kill it. Everything else is the real command."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

from oncelog.archive import location
from oncelog.cli import app

_ready = Path(sys.argv[1])
_files = 0


def _stall() -> None:
    _ready.touch()
    threading.Event().wait()  # until SIGKILLed


def _second_file(data: bytes) -> bool:
    global _files  # noqa: PLW0603 - one process, one count
    if not data.startswith(b"PAR1"):
        return False
    _files += 1
    return _files == 2


_real_put_local = location._put_local


def _put_local(temp: Path, final: Path, data: bytes) -> None:
    if _second_file(data):
        final.parent.mkdir(parents=True, exist_ok=True)
        with temp.open("wb") as out:
            out.write(data[: len(data) // 2])
        _stall()
    _real_put_local(temp, final, data)


class _StallingFs:
    """The real file system, whose second file's upload stops half-way."""

    def __init__(self, fs: Any) -> None:
        self._fs = fs

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fs, name)

    def open_output_stream(self, path: str) -> Any:
        stream = self._fs.open_output_stream(path)
        real_write = stream.write

        def write(data: bytes) -> int:
            if _second_file(data):
                real_write(data[: len(data) // 2])
                stream.flush()
                _stall()
            written: int = real_write(data)
            return written

        return _Stream(stream, write)


class _Stream:
    def __init__(self, stream: Any, write: Any) -> None:
        self._stream = stream
        self.write = write

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


_real_init = location.ArchiveLocation.__init__


def _init(self: location.ArchiveLocation, fs: Any, root: str, url: str) -> None:
    _real_init(self, fs, root, url)
    if not self.local:
        self.fs = _StallingFs(fs)


location._put_local = _put_local
location.ArchiveLocation.__init__ = _init  # type: ignore[method-assign]
sys.argv = ["oncelog", "archive", "run", "--once"]
app()
