"""The floor under the HTTP write API: its clients against a server that does no work. Not a test.

    python -m bench.bench_http_floor [--seconds S] [--workers W,W2] [--server-workers G]
                                     [--rounds R]

``make bench-http`` compares claims over HTTP with the Python SDK's claims over Kafka. This
run asks what the HTTP clients alone cost on this machine. One broker and one ``oncelog
serve``; a real ``oncelog gateway`` answers one claim and one completion, whose status and
body are recorded; then ``bench/http_floor_server.py`` (``G`` uvicorn workers, the gateway's
server settings) answers every claim and completion with those recorded bytes: no Kafka, no
key memory, no fold. For each count of client workers ``W``, ``R`` rounds of:

- ``python_sdk``: ``LedgerClient`` over Kafka through the real ``serve`` (as in ``bench_http``);
- ``python_http_floor``: the same ``httpx`` clients as ``bench_http``, against the floor;
- ``node_http_floor``: the TypeScript SDK in a Node child, against the floor.

Each reports cycles/s of ``W`` workers for ``S`` seconds (claim + complete), the client's CPU
per request and the floor server's. A floor below 0.8x the SDK's cycles/s means no gateway
can meet that target with that client on this machine: the floor does nothing but HTTP. The
last line is one JSON object, with the load average before and after.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import httpx

from bench.bench_http import (
    TOKEN,
    _start_gateway,
    claim_body,
    clients,
    clients_parser,
    complete_body,
    rounds,
)
from bench.common import bench_settings, on_broker
from oncelog.net import free_port
from oncelog.projector import process


def _record(url: str) -> dict[str, list[Any]]:
    """One real claim and completion through the gateway: their statuses and bodies."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {TOKEN}"}) as http:
        claim = http.post("/v1/claims", json=claim_body("floor", 0, "floor"))
        c = claim.json()
        done = complete_body("floor", 0, c["claim_token"])
        complete = http.post(f"/v1/executions/{c['execution']['id']}/complete", json=done)
        claim.raise_for_status()
        complete.raise_for_status()
        return {
            "claim": [claim.status_code, c],
            "complete": [complete.status_code, complete.json()],
        }


def _start_floor(answers: Path, port: int, count: int, log: Path) -> Any:
    command = ["-m", "bench.http_floor_server", str(port), str(answers), str(count)]
    floor = process.spawn(command, log)
    process.wait_http(floor, f"http://127.0.0.1:{port}/", log)  # any path answers
    return floor


def _round(settings: Any, url: str, floor: int, args: argparse.Namespace) -> dict[str, Any]:
    figures = clients(settings, url, floor, args, suffix="_floor")
    sdk = figures["python_sdk"]["cycles_per_s"]
    ratios = {
        f"{k}_vs_sdk": round(figures[k]["cycles_per_s"] / sdk, 2)
        for k in ("python_http_floor", "node_http_floor")
    }
    return {**figures, **ratios}


def measure(bootstrap: str, tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Record the answers from a real gateway, then the rounds beside the floor server."""
    settings = bench_settings(bootstrap, tmp, "floor").model_copy(update={"http_port": free_port()})
    serve = process.start_serve(settings, tmp / "serve.log")
    floor = None
    try:
        process.wait_http(
            serve, f"http://127.0.0.1:{settings.http_port}/healthz", tmp / "serve.log"
        )
        port = free_port()
        gateway = _start_gateway(settings, port, 1, tmp / "gateway.log")
        try:
            answers = tmp / "answers.json"
            answers.write_text(json.dumps(_record(f"http://127.0.0.1:{port}")))
        finally:
            process.stop(gateway)
        port = free_port()
        floor = _start_floor(answers, port, args.server_workers, tmp / "floor.log")
        url = f"http://127.0.0.1:{port}"
        pid = floor.pid
        runs = rounds(args, lambda shape: _round(settings, url, pid, shape))
        return {"runs": runs, "seconds": args.seconds, "server_workers": args.server_workers}
    finally:
        if floor is not None:
            process.stop(floor)  # it stops its workers on SIGTERM
        process.stop(serve)


def main() -> None:
    """Parse the arguments, run once, print the figures."""
    parser = clients_parser(__doc__ or "", sequential=20)
    parser.add_argument("--server-workers", type=int, default=2)
    args = parser.parse_args()
    print(json.dumps(on_broker("http-floor", lambda b, tmp: measure(b, tmp, args))))


if __name__ == "__main__":
    main()
