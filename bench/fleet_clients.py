"""The client processes of ``make bench-fleet``: one busy client, many idle ones.

Each runs as ``python -m bench.fleet_clients busy|idle`` with the fleet's ``ONCELOG_*``
settings in its environment, prints ``ready`` once its client listens, obeys ``go`` /
``stop`` lines on stdin, and prints one JSON line of figures before it exits.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import threading
import time
import uuid
from typing import Any

from bench.peers import workload
from bench.peers.oncelog_peer import OncelogPeer
from oncelog.kafka.reader import topic_ends
from oncelog.producer.client import LedgerClient
from oncelog.producer.dispatch import Dispatcher, Timeouts
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings

TIMEOUTS = Timeouts(120, 20)
DRAIN_TIMEOUT_S = 30.0


def _say(line: str) -> None:
    print(line, flush=True)


def _dispatcher(transport: object) -> Dispatcher:
    assert isinstance(transport, Dispatcher)
    return transport


def _wait_for_line(expected: str) -> None:
    """Block until the parent writes ``expected`` (or closes stdin)."""
    for line in sys.stdin:
        if line.strip() == expected:
            return


def _decisions_total(settings: Settings) -> tuple[int, dict[int, int]]:
    """Every decision published so far (summed over reply partitions), and each end."""
    assert settings.bootstrap_servers is not None
    ends = topic_ends(settings.kafka_config(settings.bootstrap_servers), settings.decisions_topic)
    return sum(ends.values()), ends


# --- the busy client ------------------------------------------------------------------


async def _trickle(peer: OncelogPeer, run: str, stop: asyncio.Event) -> None:
    """One worker cycling while the idle clients start: the partition looks busy to them."""
    i = 0
    while not stop.is_set():
        await workload.cycle(peer, f"{run}-trickle", f"k-{i}", i)
        i += 1


async def busy(args: argparse.Namespace) -> dict[str, Any]:
    """Warm up, say ready, trickle until ``go``; then the window and the sequential claims."""
    settings = Settings()
    run = f"busy-{uuid.uuid4().hex[:6]}"
    async with LedgerClient(settings, timeouts=TIMEOUTS) as client:
        peer = OncelogPeer(client)
        for i in range(args.warmup):
            await workload.cycle(peer, f"{run}-warm", f"k-{i}", i)
        _say("ready")
        stop = asyncio.Event()
        trickle = asyncio.create_task(_trickle(peer, run, stop))
        await asyncio.to_thread(_wait_for_line, "go")
        stop.set()
        await trickle

        def fresh(w: int, i: int) -> Any:
            return workload.cycle(peer, f"{run}-fresh-{w}", f"k-{i}", i)

        done, rate = await workload.timed_window(args.workers, args.seconds, fresh)
        claims, _ = await workload.sequential(peer, run, args.sequential)
        transport = _dispatcher(client.transport)
        return {
            "reply_partition": transport.reply_partition,
            "claim_p50_ms": round(statistics.median(claims), 3),
            "cycles_per_s": round(rate, 1),
            "cycles": done,
            "received": transport.decisions_received,
        }


# --- an idle client -------------------------------------------------------------------


def _stop_on_line(stop: threading.Event) -> None:
    _wait_for_line("stop")
    stop.set()


def idle(args: argparse.Namespace) -> dict[str, Any]:
    """One cycle every ``--period`` seconds until ``stop``; then its share of the fleet's
    decisions while it listened: records its listener consumed / records published."""
    settings = Settings()
    channel = f"idle-{uuid.uuid4().hex[:6]}"
    with SyncLedgerClient(settings, timeouts=TIMEOUTS) as client:
        transport = _dispatcher(client.transport)
        mine = transport.reply_partition
        total_start, ends_start = _decisions_total(settings)
        stop = threading.Event()
        threading.Thread(target=_stop_on_line, args=(stop,), daemon=True).start()
        _say("ready")
        cycles = 0
        while not stop.wait(args.period):  # pacing, not synchronisation: an idle client
            claim = client.claim_execution(channel, f"k-{cycles}", tool_name="t", params={})
            client.complete_execution(claim.execution, claim.claim_token, cycles)
            cycles += 1
        total_end, ends_end = _decisions_total(settings)
        published_here = ends_end[mine] - ends_start[mine]
        deadline = time.monotonic() + DRAIN_TIMEOUT_S
        while transport.decisions_received < published_here and time.monotonic() < deadline:
            time.sleep(0.01)  # the listener thread drains its partition up to ends_end
        received = transport.decisions_received
        fleet = max(total_end - total_start, 1)
        return {
            "reply_partition": mine,
            "cycles": cycles,
            "received": received,
            "fleet_decisions": total_end - total_start,
            "share": round(received / fleet, 4),
        }


def main() -> None:
    """Run one client role; the last line is its JSON figures."""
    parser = argparse.ArgumentParser(prog="python -m bench.fleet_clients")
    parser.add_argument("role", choices=["busy", "idle"])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=32)
    parser.add_argument("--sequential", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--period", type=float, default=1.0)
    args = parser.parse_args()
    figures = asyncio.run(busy(args)) if args.role == "busy" else idle(args)
    _say(json.dumps(figures))


if __name__ == "__main__":
    main()
