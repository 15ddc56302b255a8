"""A write API that does no work: the server side of ``bench/bench_http_floor.py``. Not a test.

    python -m bench.http_floor_server PORT ANSWERS.json WORKERS

``WORKERS`` processes serve ``PORT`` (``SO_REUSEPORT``, as ``oncelog gateway`` does) under
uvicorn with the gateway's own server settings. Each answers a claim and a completion with
the status and body recorded from a real gateway (``ANSWERS.json``: ``{"claim": [status,
body], "complete": [status, body]}``) and nothing else: no Kafka, no key memory, no fold.
What clients reach against it is the most any gateway can reach with them on this machine.
"""

from __future__ import annotations

import json
import multiprocessing
import signal
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import uvicorn

from oncelog.gateway.workers import BACKLOG, reuseport_socket

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]


def _app(answers: dict[str, tuple[int, bytes]]) -> Callable[..., Awaitable[None]]:
    headers = [(b"content-type", b"application/json")]

    async def app(scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        more = True
        while more:  # the body is read, as a real route must, then dropped
            more = (await receive()).get("more_body", False)
        status, body = answers["claim" if scope["path"] == "/v1/claims" else "complete"]
        length = [(b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers + length})
        await send({"type": "http.response.body", "body": body})

    return app


def _worker(port: int, answers: dict[str, tuple[int, bytes]]) -> None:
    sock = reuseport_socket("127.0.0.1", port)
    config = uvicorn.Config(
        _app(answers), log_level="warning", access_log=False, backlog=BACKLOG, proxy_headers=False
    )
    uvicorn.Server(config).run(sockets=[sock])


def main() -> None:
    """Serve until killed."""
    port, path, count = int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    recorded = json.loads(path.read_text())
    answers = {
        name: (int(status), json.dumps(body).encode()) for name, (status, body) in recorded.items()
    }
    # Daemonic: SIGTERM exits this process, and multiprocessing's exit handler stops them.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    workers = [
        multiprocessing.Process(target=_worker, args=(port, answers), daemon=True)
        for _ in range(count)
    ]
    for worker in workers:
        worker.start()
    print("floor on", port, flush=True)
    for worker in workers:
        worker.join()


if __name__ == "__main__":
    main()
