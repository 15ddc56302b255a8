"""``oncelog gateway``: the write API in worker processes of its own, behind one port.

Each worker is a process with its own event loop, its own Kafka transport (one producer,
one reply listener, its requests in flight batched into the producer as the SDK's are)
and its own socket bound with ``SO_REUSEPORT``: the kernel spreads connections over the
workers, and no worker shares a GIL with a projector or with another worker. The
supervisor holds the port (so that port 0 is one port for all), starts the workers,
starts again one that dies, and stops them all on SIGINT or SIGTERM.

The workers share one memory of idempotency keys (a SQLite file, with the key of the
claim tokens derived from them: :class:`~oncelog.gateway.idempotency.KeyMemory`), so a
key reused on another worker is judged as on the first (docs/http-api.md).
"""

from __future__ import annotations

import contextlib
import functools
import multiprocessing
import os
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from multiprocessing.context import SpawnProcess
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Final

import uvicorn

from oncelog.errors import ConfigError, LedgerError
from oncelog.gateway.app import create_write_app
from oncelog.gateway.idempotency import KeyMemory
from oncelog.gateway.service import open_write_api
from oncelog.settings import Settings
from oncelog.waiting import poll_until

START_TIMEOUT_S: Final = 60.0
STOP_TIMEOUT_S: Final = 30.0
BACKLOG: Final = 2048


@dataclass(frozen=True)
class WorkerPlan:
    """What a worker needs, sent to its process: the settings, where to serve, the keys."""

    settings: Settings
    bootstrap: str
    host: str
    port: int
    keys: Path


def reuseport_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` that other processes of this user can bind too."""
    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((bare, port))
    except OSError as exc:
        sock.close()
        raise LedgerError(f"the gateway could not bind {host}:{port}: {exc}") from exc
    return sock


def run_worker(plan: WorkerPlan, ready: Event) -> None:
    """One worker until SIGINT or SIGTERM (uvicorn's own handlers): its transport, its app,
    its socket; ``ready`` is set once it accepts connections."""
    sock = reuseport_socket(plan.host, plan.port)
    writes = open_write_api(plan.settings, plan.bootstrap, keys=KeyMemory(path=plan.keys))
    assert writes is not None  # the supervisor refuses to start without a write token
    # No proxy headers: nothing here reads the client's address.
    config = uvicorn.Config(
        create_write_app(writes.api),
        log_level="warning",
        access_log=False,
        backlog=BACKLOG,
        proxy_headers=False,
    )
    server = uvicorn.Server(config)

    def announce() -> None:
        # uvicorn exposes no event to wait on: poll, bounded.
        poll_until(time.monotonic() + START_TIMEOUT_S, lambda: server.started, pause_s=0.01)
        if server.started:
            ready.set()

    threading.Thread(target=announce, name="oncelog-gateway-ready", daemon=True).start()
    # uvicorn stops gracefully on these, then raises the signal again to the handler it
    # found: this one only asks it to stop (a signal before it serves, too), so that the
    # transport below is flushed and closed.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: setattr(server, "should_exit", True))
    try:
        server.run(sockets=[sock])
    finally:
        writes.close()
        sock.close()


class _Workers:
    """The worker processes of one gateway (spawned: a fresh interpreter each)."""

    def __init__(self, plan: WorkerPlan, count: int) -> None:
        self._plan = plan
        self._count = count
        self._context = multiprocessing.get_context("spawn")
        self.processes: list[SpawnProcess] = []

    def start(self) -> None:
        """Start every worker; return once each accepts connections (bounded)."""
        started = []
        for n in range(self._count):
            ready = self._context.Event()
            process = self._context.Process(
                target=run_worker, args=(self._plan, ready), name=f"oncelog-gateway-{n}"
            )
            process.start()
            self.processes.append(process)
            started.append((process, ready))
        deadline = time.monotonic() + START_TIMEOUT_S
        for process, ready in started:
            # A worker that exits (a broker it cannot reach, say) fails the start at once.
            poll_until(deadline, functools.partial(_settled, process, ready), pause_s=0.01)
            if not ready.is_set():
                raise LedgerError(
                    f"gateway worker {process.name} did not start (exit code "
                    f"{process.exitcode}); its error is above"
                )

    def stop(self) -> list[int | None]:
        """SIGTERM each worker (uvicorn finishes the requests in flight), then SIGKILL;
        their exit codes."""
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        for process in self.processes:
            process.join(STOP_TIMEOUT_S)
            if process.is_alive():
                process.kill()
                process.join()
        return [process.exitcode for process in self.processes]


def run_gateway(
    settings: Settings,
    bootstrap: str,
    *,
    host: str,
    port: int,
    workers: int,
    keys: Path | None = None,
    on_ready: Callable[[int], None] = lambda port: None,
) -> None:
    """Serve the write API on ``host:port`` from ``workers`` processes until SIGINT or
    SIGTERM; ``on_ready`` gets the bound port once every worker accepts connections.

    ``keys``: the idempotency keys' file, for gateways started separately on one port
    (None: a file of this gateway's own). A worker that exits on its own stops the
    gateway (raising ``LedgerError``), for its process supervisor to start again.
    """
    if settings.http_write_token is None:
        raise ConfigError("oncelog gateway serves the write API only: set ONCELOG_HTTP_WRITE_TOKEN")
    woken, wake = os.pipe()
    os.set_blocking(wake, False)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: _poke(wake))
    # Held (bound, never listening) so that port 0 names one port for every worker.
    # The keys' file in memory where there is a tmpfs: its writes are the workers' per POST.
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    with reuseport_socket(host, port) as held, tempfile.TemporaryDirectory(dir=shm) as tmp:
        bound = int(held.getsockname()[1])
        plan = WorkerPlan(settings, bootstrap, host, bound, keys or Path(tmp) / "keys.sqlite")
        # The file and its claim key exist before the workers open it.
        KeyMemory(path=plan.keys).claim_key()
        pool = _Workers(plan, workers)
        try:
            pool.start()
            on_ready(bound)
            ended = wait([woken, *(p.sentinel for p in pool.processes)])
        finally:
            codes = pool.stop()
        if woken not in ended:
            raise LedgerError("a gateway worker exited: the gateway stopped (its error is above)")
        if any(codes):  # each worker closes its transport, its requests sent, and exits 0
            raise LedgerError(f"gateway workers did not stop cleanly: exit codes {codes}")


def _settled(process: SpawnProcess, ready: Event) -> bool:
    return ready.is_set() or not process.is_alive()


def _poke(fd: int) -> None:
    with contextlib.suppress(BlockingIOError):  # a wake-up is already pending
        os.write(fd, b"!")
