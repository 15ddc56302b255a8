"""One oncelog round of ``bench.peers`` on a running broker; the last line is JSON. Not a test.

    python -m bench.peers.one_round BOOTSTRAP [--seconds S] [--tag NAME]

For side-by-side runs of two trees, or of tracing off and on (``ONCELOG_BENCH_TRACING=1``),
interleaved on one warm broker: A, B, A, B... so that a machine busy with other work
slows both alike. Prints the round's cycles/s and CPU per cycle of each process.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from pathlib import Path

from bench.common import bench_settings, tracing_wanted
from bench.peers.__main__ import run_oncelog
from bench.peers.workload import Workload


def main() -> None:
    """Run the round and print its JSON line."""
    parser = argparse.ArgumentParser(prog="python -m bench.peers.one_round", description=__doc__)
    parser.add_argument("bootstrap", help="host:port of a running broker (past its JIT warm-up)")
    parser.add_argument("--seconds", type=float, default=10.0, help="each 64-worker window")
    parser.add_argument("--tag", default="oncelog", help="a name for this round's line")
    args = parser.parse_args()
    if tracing_wanted():
        from bench import traced  # noqa: PLC0415  # the OpenTelemetry SDK, only when asked

        traced.install()
    tmp = Path(tempfile.mkdtemp(prefix="oncelog-one-round-"))
    try:
        load = Workload(window_seconds=args.seconds, mix_seconds=args.seconds)
        result = run_oncelog(bench_settings(args.bootstrap, tmp, "one-round"), load)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps({
        "tag": args.tag, "tracing": tracing_wanted(), "load_avg_1m": os.getloadavg()[0],
        "cycles_per_s": round(result.cycles_per_s, 1),
        "cpu_us_per_cycle": {k: round(v, 1) for k, v in result.cpu_us_per_cycle.items()},
    }))  # fmt: skip


if __name__ == "__main__":
    main()
