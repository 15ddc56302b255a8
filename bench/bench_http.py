"""Claims through the HTTP write API, from Node and from Python, beside the Python SDK. Not a test.

    python -m bench.bench_http [--sequential N] [--seconds S] [--workers W,W2]
                               [--gateway-workers G] [--rounds R]

One broker, one ``oncelog serve`` child (the projector), one ``oncelog gateway`` child with
``G`` worker processes serving the write API (``ONCELOG_HTTP_WRITE_TOKEN``), one run. For
each count of client workers ``W``, ``R`` rounds of three clients, one after the other, each
on steps of its own channel:

- ``python_sdk``: ``LedgerClient`` on Kafka (the gateway workers' own transport);
- ``python_http``: an ``httpx.AsyncClient`` per worker posting to the gateway (keyed POSTs);
- ``node_http``: the TypeScript SDK (``sdk/typescript``, built first) in a Node child,
  ``bench/bench_http.mjs``.

Each measures claim latency of one sequential worker (``N`` fresh claims: p50/p99 ms), then
cycles per second (claim + complete of a fresh step) of ``W`` concurrent workers for ``S``
seconds, with a cycle's p50 under that load (the Node side also its claim's and completion's),
the client's CPU per request (this process for the SDK and ``httpx``, the Node child's) and,
over HTTP, the gateway workers'. The load average before and after is in the result. The last
line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import resource
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
    cpu_before = time.process_time()
    latencies = []
    for step in range(args.sequential):
        began = time.perf_counter()
        await claim(channel, step)
        latencies.append((time.perf_counter() - began) * 1000)
    loaded: list[float] = []
    stop_at = time.perf_counter() + args.seconds

    async def worker(w: int) -> None:
        channel, step = f"w{w}-{uuid.uuid4().hex[:8]}", 0
        while time.perf_counter() < stop_at:
            began = time.perf_counter()
            await cycle(channel, step)
            loaded.append((time.perf_counter() - began) * 1000)
            step += 1

    began = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(args.workers)))
    elapsed = time.perf_counter() - began
    requests = args.sequential + 2 * len(loaded)
    return {
        "claim_p50_ms": round(pct(latencies, 0.5), 2),
        "claim_p99_ms": round(pct(latencies, 0.99), 2),
        "cycles_per_s": round(len(loaded) / elapsed, 1),
        "loaded_cycle_p50_ms": round(pct(loaded, 0.5), 2),
        # This process is the client: its CPU per request (the SDK's, or httpx's).
        "client_cpu_us_per_request": round((time.process_time() - cpu_before) / requests * 1e6, 1),
    }


async def _python_sdk(settings: Any, args: argparse.Namespace) -> dict[str, float]:
    async with LedgerClient(settings, worker_id="bench-sdk") as client:

        async def claim(channel: str, step: int) -> Any:
            return await client.claim_execution(channel, step=step, tool_name="t", params={})

        async def cycle(channel: str, step: int) -> None:
            c = await claim(channel, step)
            await client.complete_execution(c.execution, c.claim_token, step)

        return await _measure(claim, cycle, args)


def claim_body(channel: str, step: int, worker_id: str) -> dict[str, Any]:
    """The write API's claim of ``step`` of ``channel`` (tool ``t``, no parameters)."""
    return {
        "channel_id": channel,
        "step": step,
        "tool_name": "t",
        "params": {},
        "worker_id": worker_id,
    }


def complete_body(channel: str, step: int, claim_token: str) -> dict[str, Any]:
    """The completion of that claim, whose result is the step."""
    return {
        "channel_id": channel,
        "key_name": f"step-{step}",
        "claim_token": claim_token,
        "result": step,
    }


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
            body = claim_body(channel, step, "bench-http-py")
            return (await post(channel, "/v1/claims", body)).json()

        async def cycle(channel: str, step: int) -> None:
            c = await claim(channel, step)
            body = complete_body(channel, step, c["claim_token"])
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
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, check=True, capture_output=True, text=True, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    spent = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    requests = args.sequential + 2 * figures["cycles_per_s"] * args.seconds
    return {**figures, "client_cpu_us_per_request": round(spent / requests * 1e6, 1)}


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


def clients(
    settings: Any, url: str, server: int, args: argparse.Namespace, suffix: str = ""
) -> dict[str, Any]:
    """One round: the SDK over Kafka, then httpx and Node against ``url``, whose server's
    workers are the children of ``server`` (``suffix`` ends the two HTTP figures' names)."""
    sdk = asyncio.run(_python_sdk(settings, args))
    before = _children_cpu_s(server)
    python = _with_gateway_cpu(asyncio.run(_python_http(url, args)), server, before, args)
    before = _children_cpu_s(server)
    node = _with_gateway_cpu(_node_http(url, args), server, before, args)
    return {"python_sdk": sdk, f"python_http{suffix}": python, f"node_http{suffix}": node}


def rounds(
    args: argparse.Namespace, one: Callable[[argparse.Namespace], dict[str, Any]]
) -> dict[str, list[dict[str, Any]]]:
    """``args.rounds`` rounds of ``one`` at each count of ``args.workers``, interleaved
    within a count: a shared box's load moves between them."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for workers in args.workers:
        shape = argparse.Namespace(**{**vars(args), "workers": workers})
        runs[str(workers)] = [one(shape) for _ in range(args.rounds)]
    return runs


def clients_parser(doc: str, sequential: int) -> argparse.ArgumentParser:
    """The options of a run of the clients (``doc``: the bench's, whose first line describes
    it): ``--sequential`` claims timed one at a time first, then ``--seconds`` of each count
    of ``--workers``, ``--rounds`` times."""
    parser = argparse.ArgumentParser(description=doc.split("\n", maxsplit=1)[0])
    parser.add_argument("--sequential", type=int, default=sequential)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument(
        "--workers",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[16, 64],
        help="client worker counts, comma-separated",
    )
    parser.add_argument("--rounds", type=int, default=2, help="SDK, Python, Node rounds")
    return parser


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
        pid = gateway.pid
        return {
            "runs": rounds(args, lambda shape: clients(settings, url, pid, shape)),
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
    parser = clients_parser(__doc__ or "", sequential=300)
    parser.add_argument("--gateway-workers", type=int, default=2)
    args = parser.parse_args()
    print(json.dumps(on_broker("http", lambda b, tmp: measure(b, tmp, args))))


if __name__ == "__main__":
    main()
