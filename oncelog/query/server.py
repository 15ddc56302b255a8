"""Serve the read-only HTTP API from the projector process, in a thread."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import uvicorn

from oncelog.errors import LedgerError
from oncelog.projector.store import Store
from oncelog.query.http import create_app


@dataclass
class HttpServer:
    """A running uvicorn server over a store's cursors."""

    server: uvicorn.Server
    thread: threading.Thread

    @property
    def port(self) -> int:
        """The bound port (useful when asked for port 0)."""
        sockets = self.server.servers[0].sockets if self.server.servers else []
        return int(sockets[0].getsockname()[1]) if sockets else 0

    def stop(self) -> None:
        """Ask uvicorn to exit and wait for it."""
        self.server.should_exit = True
        self.thread.join(timeout=10)


def start_http(store: Store, host: str, port: int, *, max_rows: int = 1000) -> HttpServer:
    """Start the API on ``host:port`` and return once it accepts connections."""
    app = create_app(store.cursor, max_rows=max_rows)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    # Off the main thread uvicorn leaves signals alone: the projector owns them.
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="oncelog-http", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise LedgerError(f"the HTTP API could not start on {host}:{port}")
        time.sleep(0.01)  # uvicorn exposes no event to wait on; bounded above
    return HttpServer(server, thread)
