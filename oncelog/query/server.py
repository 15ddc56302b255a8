"""Serve the read-only HTTP API from the projector process, in a thread.

Without a bearer token it binds loopback only: any other host is refused with
``InsecureBindError`` before a socket is opened.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from dataclasses import dataclass
from typing import Unpack

import uvicorn
from pydantic import SecretStr
from starlette.types import ASGIApp

from oncelog.errors import InsecureBindError, LedgerError
from oncelog.projector.store import Store
from oncelog.query.http import AppOptions, create_app
from oncelog.settings import Settings
from oncelog.waiting import poll_until


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


def is_loopback(host: str) -> bool:
    """``localhost``, or an address in 127.0.0.0/8 or ``::1`` (brackets allowed)."""
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False  # another host name: it may resolve to anything
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def require_safe_bind(host: str, token: SecretStr | None) -> None:
    """Refuse (``insecure_bind``) a non-loopback ``host`` when no bearer token is set."""
    if token is None and not is_loopback(host):
        raise InsecureBindError(
            f"refusing to serve the HTTP API on {host!r} without a bearer token: set "
            "ONCELOG_HTTP_TOKEN, or bind loopback (127.0.0.1, ::1, localhost)"
        )


def start_http(store: Store, host: str, port: int, **options: Unpack[AppOptions]) -> HttpServer:
    """Start the API on ``host:port`` and return once it accepts connections.

    ``options`` are :func:`oncelog.query.http.create_app`'s. Raises ``InsecureBindError``
    first, before anything starts, for a non-loopback ``host`` without a ``token``.
    """
    require_safe_bind(host, options.get("token"))
    app = create_app(store.cursor, **options)
    return serve_app(app, host, port)


def serve_app(app: ASGIApp, host: str, port: int) -> HttpServer:
    """Serve ``app`` with uvicorn in a thread; return once it accepts connections."""
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False)
    # Off the main thread uvicorn leaves signals alone: the projector owns them.
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="oncelog-http", daemon=True)
    thread.start()
    # uvicorn exposes no event to wait on: poll, bounded.
    poll_until(time.monotonic() + 30, lambda: server.started or not thread.is_alive(), pause_s=0.01)
    if not server.started:
        raise LedgerError(f"the HTTP API could not start on {host}:{port}")
    return HttpServer(server, thread)


_WILDCARDS = frozenset({"", "0.0.0.0", "::", "[::]"})


def advertised_url(settings: Settings, port: int) -> str:
    """The query URL this instance gives its group: ``ONCELOG_HTTP_ADVERTISED_URL``, else
    ``http://<host>:<port>`` with the bound ``port`` (the machine's name for a wildcard host).
    """
    if settings.http_advertised_url is not None:
        return settings.http_advertised_url
    host = settings.http_host
    if host in _WILDCARDS:
        host = socket.gethostname()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"  # an IPv6 literal
    return f"http://{host}:{port}"
