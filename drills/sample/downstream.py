"""A small local downstream service that applies side effects and counts them.

Modes:
- ``honour``: it honours the ``Idempotency-Key`` header: a key seen before returns
  the first response and applies nothing.
- ``naive``: it applies every call, but can be asked whether a key was applied
  (``GET /applied?key=...``), which is what reconcile-on-reclaim needs.

Run it in its own process with ``python -m drills.sample.downstream``, or in a
thread with :func:`start`.
"""

from __future__ import annotations

import argparse
import json
import threading
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Ledger:
    """What the downstream applied: counts per (operation, key) and first responses."""

    mode: str
    applied: Counter[tuple[str, str]] = field(default_factory=Counter)
    responses: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def apply(self, op: str, key: str, payload: Any) -> tuple[Any, bool]:
        """Apply (or, honouring the key, replay) one effect; return (response, applied)."""
        with self.lock:
            if self.mode == "honour" and key in self.responses:
                return self.responses[key], False
            self.applied[(op, key)] += 1
            n = sum(self.applied.values())
            response = {"effect_id": f"fx-{n}", "payload": payload}
            self.responses.setdefault(key, response)
            return response, True

    def stats(self) -> dict[str, Any]:
        """Every (operation, key) with its count of applied effects."""
        with self.lock:
            return {"mode": self.mode, "applied": [[o, k, n] for (o, k), n in self.applied.items()]}


def _handler(ledger: Ledger) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:  # quiet: the demo prints its own story
            return

        def _reply(self, body: Any, status: int = 200) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            key = self.headers.get("Idempotency-Key", "")
            response, applied = ledger.apply(body.get("op", ""), key, body.get("payload"))
            self._reply({**response, "applied_now": applied})

        def do_GET(self) -> None:
            url = urllib.parse.urlparse(self.path)
            if url.path == "/applied":
                key = urllib.parse.parse_qs(url.query).get("key", [""])[0]
                with ledger.lock:
                    found = ledger.responses.get(key)
                self._reply({"applied": found is not None, "response": found})
            elif url.path == "/stats":
                self._reply(ledger.stats())
            else:
                self._reply({"error": "not found"}, 404)

    return Handler


@dataclass
class Downstream:
    """A running downstream service."""

    server: ThreadingHTTPServer
    ledger: Ledger
    thread: threading.Thread

    @property
    def url(self) -> str:
        """Its base URL on loopback."""
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        """Shut the server down and close its socket (a later connection is refused)."""
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


def start(mode: str = "honour", port: int = 0) -> Downstream:
    """Serve a downstream in a background thread."""
    ledger = Ledger(mode)
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(ledger))
    thread = threading.Thread(target=server.serve_forever, daemon=True, name="downstream")
    thread.start()
    return Downstream(server, ledger, thread)


class DownstreamClient:
    """What a tool uses to reach the downstream."""

    def __init__(self, url: str) -> None:
        self.url = url

    def apply(self, op: str, key: str, payload: Any) -> dict[str, Any]:
        """POST one effect with its Idempotency-Key."""
        request = urllib.request.Request(
            f"{self.url}/effect",
            data=json.dumps({"op": op, "payload": payload}).encode(),
            headers={"Idempotency-Key": key, "Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            result: dict[str, Any] = json.loads(response.read())
            return result

    def was_applied(self, key: str) -> dict[str, Any]:
        """Ask whether an effect with this key was applied (and its first response)."""
        query = urllib.parse.urlencode({"key": key})
        with urllib.request.urlopen(f"{self.url}/applied?{query}", timeout=10) as r:
            result: dict[str, Any] = json.loads(r.read())
            return result

    def stats(self) -> dict[str, Any]:
        """Counts of applied effects per (operation, key)."""
        with urllib.request.urlopen(f"{self.url}/stats", timeout=10) as r:
            result: dict[str, Any] = json.loads(r.read())
            return result


def main() -> None:
    """``python -m drills.sample.downstream --mode honour|naive --port N``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mode", choices=["honour", "naive"], default="honour")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    ledger = Ledger(args.mode)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), _handler(ledger))
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
