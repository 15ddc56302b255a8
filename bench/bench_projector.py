"""CPU time per request of ``oncelog serve`` under the 64-worker fresh-cycle load.

``python -m bench.bench_projector [--seconds S] [--workers N]``: a fresh topic set, the
projector as a child process, a warm-up (until the broker's JIT is quiet, when the broker is
ours: ``bench/peers/jit.py``), then a window of fresh claim+complete cycles
from one async client. The projector's CPU (all its threads, from /proc) is divided by
the requests it folded in the window (two per cycle). Wall-clock figures are noisy on a
shared machine; CPU per request is not, or much less.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import uuid
from pathlib import Path
from typing import Any

from bench.common import bench_broker, bench_settings, serving
from bench.peers import cpu, jit, workload
from bench.peers.oncelog_peer import OncelogPeer
from oncelog.producer.client import LedgerClient
from oncelog.producer.dispatch import Timeouts
from oncelog.settings import Settings


async def _measure(settings: Settings, pid: int, workers: int, seconds: float) -> dict[str, Any]:
    async with LedgerClient(settings, timeouts=Timeouts(120, 20)) as client:
        peer = OncelogPeer(client)
        run = uuid.uuid4().hex[:6]
        await workload.window(workers, 2.0, workload.fresh_cycles(peer, f"{run}-warm"))
        readers = cpu.oncelog_readers(pid, settings.bootstrap_servers or "")
        broker_pid = cpu.our_broker_pid(settings.bootstrap_servers or "")
        steps = workload.fresh_cycles(peer, f"{run}-jit")
        warmed_s = await jit.warm(broker_pid, lambda s: workload.window(workers, s, steps))
        before = cpu.sample(readers)
        done, rate = await workload.timed_window(
            workers, seconds, workload.fresh_cycles(peer, f"{run}-fresh")
        )
        per_cycle = cpu.us_per(before, cpu.sample(readers), done)
    return {
        "cycles": done,
        "cycles_per_s": round(rate, 1),
        "projector_cpu_us_per_request": round(per_cycle["projector"] / 2, 1),
        "cpu_us_per_cycle": {name: round(us) for name, us in per_cycle.items()},
        "broker_jit_warmup_s": round(warmed_s, 1),
    }


def main() -> None:
    """Print the projector's CPU per request as one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=64)
    args = parser.parse_args()
    with bench_broker() as broker, tempfile.TemporaryDirectory() as tmp:
        settings = bench_settings(broker.bootstrap, Path(tmp), "projector")
        with serving(settings) as serve:
            result = asyncio.run(_measure(settings, serve.pid, args.workers, args.seconds))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
