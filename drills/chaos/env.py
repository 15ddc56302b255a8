"""The harness's environment: one topic set, one ``oncelog serve``, one downstream per mode.

Everything here is a separate OS process, so a worker's SIGKILL can hurt none of it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from oncelog.net import free_port
from oncelog.projector import process
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

_START_TIMEOUT_S = 60.0


@dataclass
class Environment:
    """What the runs share: settings (with the topic set), the query API, the downstreams."""

    settings: Settings
    api_url: str
    downstreams: dict[str, str]
    serve: subprocess.Popen[bytes]


def start_serve(settings: Settings, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``python -m oncelog serve`` on the harness's topics, with its HTTP API."""
    proc = process.start_serve(settings, log)
    url = f"http://127.0.0.1:{settings.http_port}"
    process.wait_http(proc, f"{url}/healthz", log)
    return proc, url


def start_downstream(mode: str, workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``python -m drills.sample.downstream --mode MODE`` on a free port."""
    port = free_port()
    log = workdir / f"downstream-{mode}.log"
    args = ["-m", "drills.sample.downstream", "--mode", mode, "--port", str(port)]
    proc = process.spawn(args, log)
    url = f"http://127.0.0.1:{port}"
    process.wait_http(proc, f"{url}/stats", log)
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
            process.stop(proc)


def stop_serve(env: Environment) -> None:
    """Stop serve (SIGTERM: it commits what it folded) so DuckDB can be opened read-only."""
    process.stop(env.serve)
