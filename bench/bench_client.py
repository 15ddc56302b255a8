"""The client's hot path alone: CPU per cycle, claim latency and its tail. Not a test.

    python -m bench.bench_client [--seconds S] [--sequential N] [--workers W] [--sync]

``oncelog serve`` runs as a child (as deployed); the client runs in this process. In one
run: the raw confluent-kafka produce->consume RTT (before and after the client phases, so
the client's figures sit between two references taken on the same busy machine), claim
latency of one sequential worker with the garbage collector's pauses timed through
``gc.callbacks``, and the client's CPU time per cycle (claim + complete of a fresh step)
over a window of concurrent workers, read with ``time.process_time()`` (every thread of
this process). The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import pstats
import shutil
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.bench_ledger import raw_round_trip
from bench.common import bench_broker, bench_settings, pct, serving
from bench.peers import workload
from bench.peers.oncelog_peer import OncelogPeer
from oncelog.producer.client import LedgerClient
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings


@dataclass
class GcPauses:
    """Wall-clock spans of every collection while installed: (start, end) perf_counter pairs."""

    spans: list[tuple[float, float]] = field(default_factory=list)
    _began: float = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.spans.append((self._began, time.perf_counter()))

    def overlapping(self, start: float, end: float) -> float:
        """Milliseconds of collection inside [start, end]."""
        return sum(max(0.0, min(b, end) - max(a, start)) for a, b in self.spans) * 1000


@contextmanager
def gc_timed() -> Iterator[GcPauses]:
    """Time every garbage collection while the block runs."""
    pauses = GcPauses()
    gc.callbacks.append(pauses)
    try:
        yield pauses
    finally:
        gc.callbacks.remove(pauses)


def thread_ticks() -> dict[str, int]:
    """CPU clock ticks of every thread of this process, summed by thread name."""
    python_names = {t.native_id: t.name for t in threading.enumerate()}
    ticks: dict[str, int] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            stat = Path(f"/proc/self/task/{tid}/stat").read_text()
        except FileNotFoundError:
            continue  # ended between listing and reading
        name = python_names.get(int(tid)) or stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks[name] = ticks.get(name, 0) + int(fields[11]) + int(fields[12])
    return ticks


cpu_clock = os.sysconf("SC_CLK_TCK")


def _stats(prefix: str, values: list[float]) -> dict[str, float]:
    return {
        f"{prefix}_p50_ms": round(statistics.median(values), 3),
        f"{prefix}_p99_ms": round(pct(values, 0.99), 3),
    }


def raw_rtt(settings: Settings, bootstrap: str) -> list[float]:
    """The raw produce->consume reference (after a warm-up)."""
    raw_round_trip(settings.kafka_config(bootstrap), settings.deadletter_topic, 50)
    return raw_round_trip(settings.kafka_config(bootstrap), settings.deadletter_topic, 300)


async def sequential_with_gc(peer: OncelogPeer, run: str, n: int) -> dict[str, float]:
    """Claim latency of one sequential worker, and how much of the tail was GC."""
    spans: list[tuple[float, float]] = []
    with gc_timed() as pauses:
        for i in range(n):
            began = time.perf_counter()
            handle = await peer.claim(f"{run}-seq", f"k-{i}")
            spans.append((began, time.perf_counter()))
            if handle is not None:
                await peer.complete(handle, i)
    claims = [(b - a) * 1000 for a, b in spans]
    slow = pct(claims, 0.99)
    in_gc = [pauses.overlapping(a, b) for a, b in spans if (b - a) * 1000 >= slow]
    return {
        **_stats("claim", claims),
        "gc_collections": len(pauses.spans),
        "gc_max_ms": round(max(((b - a) * 1000 for a, b in pauses.spans), default=0.0), 3),
        "tail_claims_with_gc": sum(1 for ms in in_gc if ms > 0),
        "tail_claims": len(in_gc),
    }


def sync_sequential(settings: Settings, n: int) -> dict[str, float]:
    """Claim latency of the blocking client, one worker."""
    claims = []
    with SyncLedgerClient(settings, timeouts=Timeouts(120, 20)) as client:
        for i in range(n):
            began = time.perf_counter()
            claim = client.claim_execution("sync", f"k-{i}", tool_name="t", params={"i": i})
            claims.append((time.perf_counter() - began) * 1000)
            client.complete_execution(claim.execution, claim.claim_token, i)
    return _stats("sync_claim", claims)


async def cpu_window(peer: OncelogPeer, run: str, workers: int, seconds: float) -> dict[str, Any]:
    """Client CPU microseconds per cycle, and cycles/s, over a window of ``workers``."""

    def fresh(w: int, i: int) -> Any:
        return workload.cycle(peer, f"{run}-fresh-{w}", f"k-{i}", i)

    cpu_before, threads_before = time.process_time(), thread_ticks()
    done, rate = await workload.timed_window(workers, seconds, fresh)
    cpu = time.process_time() - cpu_before
    threads = {
        name: round((ticks - threads_before.get(name, 0)) * 1e6 / cpu_clock / max(done, 1), 1)
        for name, ticks in thread_ticks().items()
    }
    return {"client_cpu_us_per_cycle": round(cpu * 1e6 / max(done, 1), 1),
            "cycles_per_s": round(rate, 1), "cycles": done,
            "thread_us_per_cycle": {k: v for k, v in threads.items() if v > 0}}  # fmt: skip


async def client_phases(settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    """Warm-up, sequential claims with GC timing, then the concurrent CPU window."""
    run = f"hot-{uuid.uuid4().hex[:6]}"
    async with LedgerClient(settings, timeouts=Timeouts(120, 20)) as client:
        peer = OncelogPeer(client)
        for i in range(100):
            await workload.cycle(peer, f"{run}-warm", f"k-{i}", i)
        await cpu_window(peer, f"{run}-warm", args.workers, 1.0)
        figures = await sequential_with_gc(peer, run, args.sequential)
        profile = cProfile.Profile(time.thread_time) if args.profile else None
        if profile is not None:
            profile.enable()
        figures.update(await cpu_window(peer, run, args.workers, args.seconds))
        if profile is not None:
            profile.disable()
            pstats.Stats(profile).sort_stats("tottime").print_stats(30)
        return figures


def measure(args: argparse.Namespace, bootstrap: str, tmp: Path) -> dict[str, Any]:
    """Every phase against one fresh topic set and one ``oncelog serve`` child."""
    settings = bench_settings(bootstrap, tmp, "client")
    before = raw_rtt(settings, bootstrap)
    with serving(settings):
        figures = asyncio.run(client_phases(settings, args))
        if args.sync:
            figures.update(sync_sequential(settings, args.sequential))
    after = raw_rtt(settings, bootstrap)
    figures.update(_stats("raw_rtt", before + after))
    figures["claim_p50_over_raw"] = round(figures["claim_p50_ms"] / figures["raw_rtt_p50_ms"], 2)
    figures["claim_p99_over_p50"] = round(figures["claim_p99_ms"] / figures["claim_p50_ms"], 2)
    return figures


def main() -> None:
    """Run, print the figures; the last line is JSON."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_client", description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0, help="the concurrent window")
    parser.add_argument("--sequential", type=int, default=1000, help="sequential claims")
    parser.add_argument("--workers", type=int, default=64)
    parser.add_argument("--profile", action="store_true", help="cProfile the event loop's window")
    parser.add_argument("--sync", action="store_true", help="also the blocking client")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="oncelog-bench-client-"))
    load = os.getloadavg()[0]
    try:
        with bench_broker() as broker:  # stopped afterwards only if started here
            figures = measure(args, broker.bootstrap, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    figures["load_avg_1m"] = [round(load, 2), round(os.getloadavg()[0], 2)]
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
