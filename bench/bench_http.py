"""Claims through the HTTP write API, from Node and from Python, beside the Python SDK. Not a test.

    python -m bench.bench_http [--sequential N] [--seconds S] [--workers W,W2]
                               [--gateway-workers G]

One broker, one ``oncelog serve`` child (the projector), one ``oncelog gateway`` child with
``G`` worker processes serving the write API (``ONCELOG_HTTP_WRITE_TOKEN``), one run. For
each count of client workers ``W``, three clients, one after the other, each on steps of
its own channel:

- ``python_sdk``: ``LedgerClient`` on Kafka (the gateway workers' own transport);
- ``python_http``: an ``httpx.AsyncClient`` per worker posting to the gateway (keyed POSTs);
- ``node_http``: the TypeScript SDK (``sdk/typescript``, built first) in a Node child,
  ``bench/bench_http.mjs``.

Each measures claim latency of one sequential worker (``N`` fresh claims: p50/p99 ms), then
cycles per second (claim + complete of a fresh step) of ``W`` concurrent workers for ``S``
seconds (the Node side also reports its claim and completion p50 under that load). The
load average before and after is in the result. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from pydantic import SecretStr

from bench.common import bench_settings, on_broker, pct
from oncelog.net import free_port
from oncelog.producer.client import LedgerClient
from oncelog.projector import process
from oncelog.waiting import poll_until

ROOT = Path(__file__).resolve().parent.parent
SDK = ROOT / "sdk" / "typescript"
TOKEN = "bench-http-write-token"

Cycle = Callable[[str, int], Awaitable[None]]
Claim = Callable[[str, int], Awaitable[Any]]


async def _measure(claim: Claim, cycle: Cycle, args: argparse.Namespace) -> dict[str, float]:
    channel = f"seq-{uuid.uuid4().hex[:8]}"
    latencies = []
    for step in range(args.sequential):
        began = time.perf_counter()
        await claim(channel, step)
        latencies.append((time.perf_counter() - began) * 1000)
    done = 0
    stop_at = time.perf_counter() + args.seconds

    async def worker(w: int) -> None:
        nonlocal done
        channel, step = f"w{w}-{uuid.uuid4().hex[:8]}", 0
        while time.perf_counter() < stop_at:
            await cycle(channel, step)
            step += 1
            done += 1

    began = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(args.workers)))
    elapsed = time.perf_counter() - began
    return {
        "claim_p50_ms": round(pct(latencies, 0.5), 2),
        "claim_p99_ms": round(pct(latencies, 0.99), 2),
        "cycles_per_s": round(done / elapsed, 1),
    }


async def _python_sdk(settings: Any, args: argparse.Namespace) -> dict[str, float]:
    async with LedgerClient(settings, worker_id="bench-sdk") as client:

        async def claim(channel: str, step: int) -> Any:
            return await client.claim_execution(channel, step=step, tool_name="t", params={})

        async def cycle(channel: str, step: int) -> None:
            c = await claim(channel, step)
            await client.complete_execution(c.execution, c.claim_token, step)

        return await _measure(claim, cycle, args)


async def _python_http(url: str, args: argparse.Namespace) -> dict[str, float]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    # A client (one kept-alive connection) per worker, as each worker process of a fleet
    # has: one client shared by 64 tasks spends its CPU in its connection pool.
    clients: dict[str, httpx.AsyncClient] = {}
    async with contextlib.AsyncExitStack() as stack:

        async def post(channel: str, path: str, body: dict[str, Any]) -> httpx.Response:
            http = clients.get(channel)
            if http is None:
                http = httpx.AsyncClient(base_url=url, headers=headers)
                clients[channel] = await stack.enter_async_context(http)
            key = {"Idempotency-Key": str(uuid.uuid4())}
            answer = await http.post(path, json=body, headers=key)
            answer.raise_for_status()
            return answer

        async def claim(channel: str, step: int) -> Any:
            body = {
                "channel_id": channel,
                "step": step,
                "tool_name": "t",
                "params": {},
                "worker_id": "bench-http-py",
            }
            return (await post(channel, "/v1/claims", body)).json()

        async def cycle(channel: str, step: int) -> None:
            c = await claim(channel, step)
            body = {
                "channel_id": channel,
                "key_name": f"step-{step}",
                "claim_token": c["claim_token"],
                "result": step,
            }
            await post(channel, f"/v1/executions/{c['execution']['id']}/complete", body)

        return await _measure(claim, cycle, args)


def _node_http(url: str, args: argparse.Namespace) -> dict[str, float]:
    if not (SDK / "node_modules").is_dir():
        npm_ci = ["npm", "ci", "--no-audit", "--no-fund", "--prefer-offline"]
        subprocess.run(npm_ci, cwd=SDK, check=True, capture_output=True)
    subprocess.run(["npm", "run", "build"], cwd=SDK, check=True, capture_output=True)
    script = str(ROOT / "bench" / "bench_http.mjs")
    shape = [str(args.sequential), str(args.seconds), str(args.workers)]
    command = ["node", script, url, TOKEN, *shape]
    done = subprocess.run(command, check=True, capture_output=True, text=True, timeout=600)
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def _start_gateway(settings: Any, port: int, count: int, log: Path) -> subprocess.Popen[bytes]:
    """``oncelog gateway`` with ``count`` workers; returns once every worker listens."""
    written = settings.model_copy(update={"http_write_token": SecretStr(TOKEN)})
    command = ["-m", "oncelog", "gateway", "--port", str(port), "--workers", str(count)]
    gateway = process.spawn(command, log, process.serve_env(written))

    def ready() -> bool:
        if gateway.poll() is not None:
            raise RuntimeError(f"the gateway exited:\n{log.read_text()[-2000:]}")
        return "gateway on" in log.read_text()

    if not poll_until(time.monotonic() + process.START_TIMEOUT_S, ready):
        gateway.kill()
        raise RuntimeError(f"the gateway did not start:\n{log.read_text()[-2000:]}")
    return gateway


def _children_cpu_s(parent: int) -> float:
    """CPU seconds (user + system) spent so far by the child processes of ``parent``."""
    total = 0
    for entry in Path("/proc").iterdir():
        try:
            # Fields after the command name (which may hold spaces): ppid 4th, times 14-15th.
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if entry.name.isdigit() and int(fields[1]) == parent:
            total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def _with_gateway_cpu(
    figures: dict[str, float], gateway: int, before: float, args: argparse.Namespace
) -> dict[str, float]:
    """``figures`` with the gateway workers' CPU per request over HTTP (about: the count
    of requests is derived from the rate)."""
    requests = args.sequential + 2 * figures["cycles_per_s"] * args.seconds
    spent = _children_cpu_s(gateway) - before
    return {**figures, "gateway_cpu_us_per_request": round(spent / requests * 1e6, 1)}


def _clients(settings: Any, url: str, gateway: int, args: argparse.Namespace) -> dict[str, Any]:
    sdk = asyncio.run(_python_sdk(settings, args))
    before = _children_cpu_s(gateway)
    python = _with_gateway_cpu(asyncio.run(_python_http(url, args)), gateway, before, args)
    before = _children_cpu_s(gateway)
    node = _with_gateway_cpu(_node_http(url, args), gateway, before, args)
    return {"python_sdk": sdk, "python_http": python, "node_http": node}


def measure(bootstrap: str, tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The three clients on one broker, one serve and one gateway, at each worker count."""
    settings = bench_settings(bootstrap, tmp, "http").model_copy(update={"http_port": free_port()})
    serve = process.start_serve(settings, tmp / "serve.log")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    gateway = None
    try:
        process.wait_http(
            serve, f"http://127.0.0.1:{settings.http_port}/healthz", tmp / "serve.log"
        )
        gateway = _start_gateway(settings, port, args.gateway_workers, tmp / "gateway.log")
        runs = {}
        for workers in args.workers:
            shape = argparse.Namespace(**{**vars(args), "workers": workers})
            runs[str(workers)] = _clients(settings, url, gateway.pid, shape)
        return {
            "runs": runs,
            "sequential": args.sequential,
            "seconds": args.seconds,
            "gateway_workers": args.gateway_workers,
        }
    finally:
        if gateway is not None:
            process.stop(gateway)
        process.stop(serve)


def main() -> None:
    """Parse the arguments, run once, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sequential", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument(
        "--workers",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[16, 64],
        help="client worker counts, comma-separated",
    )
    parser.add_argument("--gateway-workers", type=int, default=2)
    args = parser.parse_args()
    print(json.dumps(on_broker("http", lambda b, tmp: measure(b, tmp, args))))


if __name__ == "__main__":
    main()
