"""The harness's environment: one topic set, one ``oncelog serve``, one downstream per mode.

Everything here is a separate OS process, so a worker's SIGKILL can hurt none of it.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from oncelog.errors import LedgerError
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

_START_TIMEOUT_S = 60.0


def free_port() -> int:
    """A TCP port free on loopback right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_http(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise LedgerError(f"{proc.args!r} exited early:\n{log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)  # not listening yet; bounded by the deadline
    proc.kill()
    raise LedgerError(f"{url} did not answer within {_START_TIMEOUT_S} s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


def _spawn(
    args: list[str], log: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen([sys.executable, *args], env=env, stdout=out,
                                stderr=subprocess.STDOUT)  # fmt: skip


@dataclass
class Environment:
    """What the runs share: settings (with the topic set), the query API, the downstreams."""

    settings: Settings
    api_url: str
    downstreams: dict[str, str]
    serve: subprocess.Popen[bytes]


def start_serve(settings: Settings, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``python -m oncelog serve`` on the harness's topics, with its HTTP API."""
    env = {
        **os.environ,
        "ONCELOG_BOOTSTRAP_SERVERS": settings.bootstrap_servers or "",
        "ONCELOG_TOPIC_PREFIX": settings.topic_prefix,
        "ONCELOG_PARTITIONS": str(settings.partitions),
        "ONCELOG_DB_PATH": str(settings.db_path),
        "ONCELOG_HTTP_PORT": str(settings.http_port),
    }
    proc = _spawn(["-m", "oncelog", "serve"], log, env)
    url = f"http://127.0.0.1:{settings.http_port}"
    _wait_http(proc, f"{url}/healthz", log)
    return proc, url


def start_downstream(mode: str, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``python -m oncelog.sample.downstream --mode MODE`` on a free port."""
    port = free_port()
    log = workdir / f"downstream-{mode}.log"
    proc = _spawn(["-m", "oncelog.sample.downstream", "--mode", mode, "--port", str(port)], log)
    url = f"http://127.0.0.1:{port}"
    _wait_http(proc, f"{url}/stats", log)
    return proc, url


@contextmanager
def environment(settings: Settings, modes: set[str], workdir: Path) -> Iterator[Environment]:
    """Create the topics, start serve and the downstreams; stop them all on exit."""
    assert settings.bootstrap_servers is not None
    create_topics(admin_client(settings, settings.bootstrap_servers), ledger_topics(settings))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        serve, api = start_serve(settings, workdir / "serve.log")
        procs.append(serve)
        urls = {}
        for mode in sorted(modes):
            proc, urls[mode] = start_downstream(mode, workdir)
            procs.append(proc)
        yield Environment(settings, api, urls, serve)
    finally:
        for proc in reversed(procs):
            _stop(proc)


def stop_serve(env: Environment) -> None:
    """Stop serve (SIGTERM: it commits what it folded) so DuckDB can be opened read-only."""
    _stop(env.serve)
