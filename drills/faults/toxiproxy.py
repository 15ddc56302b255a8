"""Toxiproxy, the fault proxy between the parts: a server process and its HTTP API.

Toxiproxy (github.com/Shopify/toxiproxy, Go) is built from the Go module proxy by
``make toxiproxy`` into ``.venv/bin/toxiproxy-server`` at :data:`VERSION`. Each *link*
of the ledger (clients to broker, projector to broker, broker to broker, HTTP) is one
proxy; a fault is a *toxic* on it (latency with jitter, a bandwidth limit, a reset of
its connections, a blackhole that accepts and never answers) or the proxy disabled (a
cut: open connections closed, new ones refused), removed again when the fault heals.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drills.binaries import required
from oncelog.net import free_port

#: The release ``make toxiproxy`` builds (go install ...@VERSION; builds with Go 1.24+).
VERSION = "v2.12.0"
BINARY = "toxiproxy-server"
_START_TIMEOUT_S = 20.0
_API_TIMEOUT_S = 5.0


class ToxiproxyError(RuntimeError):
    """The proxy could not be found, started or told what to do (a drill's own failure)."""


def find_binary() -> Path:
    """``toxiproxy-server`` beside this Python (``make toxiproxy``), else on PATH."""
    return required(
        BINARY,
        "toxiproxy",
        ToxiproxyError,
        f"go install github.com/Shopify/toxiproxy/v2/cmd/server@{VERSION}",
    )


@dataclass(frozen=True)
class Link:
    """One proxied link: clients connect to ``listen``, the proxy forwards to ``upstream``."""

    name: str
    listen_port: int
    upstream: str

    @property
    def address(self) -> str:
        """Where the clients of this link connect (what a broker advertises)."""
        return f"127.0.0.1:{self.listen_port}"


class Toxiproxy:
    """A ``toxiproxy-server`` process on loopback and calls to its API."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int) -> None:
        self._proc = proc
        self.url = f"http://127.0.0.1:{port}"
        self._toxics: dict[str, list[str]] = {}  # proxy -> toxic names in place
        self.links: dict[str, Link] = {}

    @classmethod
    @contextlib.contextmanager
    def running(cls, log: Path) -> Iterator[Toxiproxy]:
        """Start a server on a free loopback port (its output to ``log``); stop it after."""
        port = free_port()
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [str(find_binary()), "-host", "127.0.0.1", "-port", str(port)],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, "LOG_LEVEL": "warn"},
            )
        proxy = cls(proc, port)
        try:
            proxy._wait_up(log)
            yield proxy
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

    def _wait_up(self, log: Path) -> None:
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise ToxiproxyError(f"toxiproxy exited: {log.read_text(errors='replace')[-800:]}")
            with contextlib.suppress(OSError):
                self._call("GET", "/version")
                return
            time.sleep(0.05)  # the server binds within milliseconds; bounded by the deadline
        raise ToxiproxyError(f"toxiproxy did not answer on {self.url} in {_START_TIMEOUT_S} s")

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=_API_TIMEOUT_S) as answer:
                text = answer.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            raise ToxiproxyError(f"toxiproxy {method} {path}: {exc.code} {detail}") from exc
        return json.loads(text) if text else None

    def link(self, name: str, upstream: str, listen_port: int | None = None) -> Link:
        """Create the proxy ``name`` forwarding a free (or given) port to ``upstream``."""
        link = Link(name, listen_port or free_port(), upstream)
        body = {"name": name, "listen": link.address, "upstream": upstream, "enabled": True}
        self._call("POST", "/proxies", body)
        self.links[name] = link
        return link

    def toxic(self, link: str, kind: str, stream: str = "downstream", **attrs: int) -> str:
        """Add a toxic of ``kind`` to one direction of ``link``; its name, for :meth:`heal`.

        ``downstream`` is what the upstream (a broker) sends back to the client.
        """
        name = f"{kind}-{stream}-{len(self._toxics.get(link, []))}"
        body = {"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attrs}
        self._call("POST", f"/proxies/{link}/toxics", body)
        self._toxics.setdefault(link, []).append(name)
        return name

    def remove(self, link: str, toxic: str) -> None:
        """Remove one toxic from ``link``."""
        self._call("DELETE", f"/proxies/{link}/toxics/{toxic}")
        self._toxics[link].remove(toxic)

    def enabled(self, link: str, on: bool) -> None:
        """Disable ``link`` (a cut: its connections closed, new ones refused) or enable it."""
        self._call("POST", f"/proxies/{link}", {"enabled": on})

    def heal(self, link: str) -> None:
        """Every toxic off ``link`` and the link enabled: the fault is over."""
        for toxic in list(self._toxics.get(link, [])):
            self.remove(link, toxic)
        self.enabled(link, True)
