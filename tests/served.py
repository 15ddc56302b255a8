"""A served ledger with its write API, and Node: for the cross-language and HTTP tests."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from oncelog.net import free_port
from oncelog.projector import process
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

ROOT = Path(__file__).resolve().parents[1]
SDK = ROOT / "sdk" / "typescript"
VECTORS = ROOT / "tests" / "vectors" / "identity.json"
NODE = shutil.which("node")
NPM = shutil.which("npm")
WRITE_TOKEN = "crosslang-tests-write-token"
APPROVER_TOKEN = "crosslang-tests-approver-token"  # the "desk" approver's, where served


def require_node() -> tuple[str, str]:
    """node and npm; skip without them, unless ``ONCELOG_REQUIRE_NODE`` is set (CI)."""
    if NODE is None or NPM is None:
        why = "node and npm are not on PATH (apt-get install nodejs npm)"
        if os.environ.get("ONCELOG_REQUIRE_NODE"):
            pytest.fail(f"ONCELOG_REQUIRE_NODE is set: {why}")
        pytest.skip(why)
    return NODE, NPM


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    """Run a command; fail with its output when it fails."""
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(args)} failed in {cwd}:\n{output[-6000:]}"
    return output


_BUILT: set[Path] = set()


def _installed(package: Path) -> bool:
    """``node_modules`` was installed from the lock file as it is now: npm's record of the
    install (its hidden lock file) is newer than the lock (a merge or a checkout that
    changed the lock makes it older, and a new ``npm ci`` due)."""
    record = package / "node_modules" / ".package-lock.json"
    lock = package / "package-lock.json"
    return record.is_file() and record.stat().st_mtime >= lock.stat().st_mtime


def build(package: Path) -> None:
    """``npm ci`` from the lock file (when it changed since the last: offline from npm's
    cache when warm), then ``tsc``; once per package and process, and under a file lock:
    xdist workers share the folder."""
    _, npm = require_node()
    if package in _BUILT:
        return
    with (package / ".build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed(package):
            run([npm, "ci", "--no-audit", "--no-fund", "--prefer-offline"], package)
        run([npm, "run", "build"], package)
    _BUILT.add(package)


@dataclass(frozen=True)
class Served:
    """A running ``oncelog serve`` with its write API."""

    settings: Settings
    url: str
    log: Path

    def node_env(self) -> dict[str, str]:
        """The environment the node code reads (sdk/typescript/test/env.ts)."""
        return {
            **os.environ,
            "ONCELOG_URL": self.url,
            "ONCELOG_HTTP_WRITE_TOKEN": WRITE_TOKEN,
            "ONCELOG_TEST_APPROVER_TOKEN": APPROVER_TOKEN,
            "ONCELOG_VECTORS": str(VECTORS),
        }


@contextmanager
def serving(
    bootstrap: str,
    folder: Path,
    read_token: str | None = None,
    *,
    spans: Path | None = None,
    **extra: Any,
) -> Iterator[Served]:
    """Topics of their own and a ``serve`` process with ONCELOG_HTTP_WRITE_TOKEN (and
    ``read_token`` as ONCELOG_HTTP_TOKEN); stopped (SIGTERM: it commits what it folded)
    on leaving; ``extra``: more settings. ``spans``: traced, its spans one JSON a line in that file
    (tests/integration/tracing/traced_serve.py)."""
    settings = Settings(
        http_token=read_token,
        bootstrap_servers=bootstrap,
        topic_prefix=f"t{uuid.uuid4().hex[:12]}",
        partitions=3,
        db_path=folder / "ledger.duckdb",
        http_port=free_port(),
        http_write_token=WRITE_TOKEN,
        **extra,
    )
    create_topics(admin_client(settings, bootstrap), ledger_topics(settings))
    log = folder / "serve.log"
    if spans is None:
        proc = process.start_serve(settings, log)
    else:
        traced = ["-m", "tests.integration.tracing.traced_serve", str(spans), "serve"]
        proc = process.spawn(traced, log, process.serve_env(settings))
    url = f"http://127.0.0.1:{settings.http_port}"
    try:
        process.wait_http(proc, f"{url}/healthz", log)
        yield Served(settings, url, log)
    finally:
        process.stop(proc)
