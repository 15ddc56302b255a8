"""A real S3-compatible server for the archive tests: gofakes3 (``make gofakes3``), started
on a free loopback port, stopped after. Its memory backend: the bolt one's CopyObject
crashes the server (v1.2.0), and the tests need no data across servers.

Skipped where it has not been built, unless ``ONCELOG_REQUIRE_GO`` is set (CI): then the
tests fail.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from drills.binaries import beside_python
from oncelog.net import free_port

#: The release ``make gofakes3`` builds; keep it equal to the Makefile's GOFAKES3_VERSION.
VERSION = "v1.2.0"
BUCKET = "oncelog-archive"
# gofakes3 checks signatures' form, not these values: any pair works, as with a real server's.
ACCESS_KEY = "oncelog-test"
SECRET_KEY = "oncelog-test-secret"
_START_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class S3Server:
    """Where the test server answers, and the bucket it made."""

    endpoint: str
    bucket: str = BUCKET


def _answers(endpoint: str) -> bool:
    try:
        with urllib.request.urlopen(f"{endpoint}/", timeout=1.0):
            return True
    except urllib.error.HTTPError:
        return True  # any S3 answer, even a refusal, means it listens
    except OSError:
        return False


@contextlib.contextmanager
def running(folder: Path) -> Iterator[S3Server]:
    """Start gofakes3 on loopback (skip or fail when it is not built); stop it after."""
    binary = beside_python("gofakes3")
    if binary is None:
        message = "gofakes3 not built: run `make gofakes3`"
        if os.environ.get("ONCELOG_REQUIRE_GO"):
            pytest.fail(f"ONCELOG_REQUIRE_GO is set: {message}")
        pytest.skip(message)
    port = free_port()
    log = folder / "gofakes3.log"
    args = [
        str(binary),
        "-backend",
        "memory",
        "-host",
        f"127.0.0.1:{port}",
        "-initialbucket",
        BUCKET,
    ]
    with log.open("ab") as out:
        proc = subprocess.Popen(
            args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while not _answers(endpoint):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gofakes3 did not start: {log.read_text(errors='replace')}")
            time.sleep(0.05)  # it binds within milliseconds; bounded by the deadline
        yield S3Server(endpoint)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
