"""``rebuild --from requests`` next to decode+fold, in one process (not a test).

    python -m bench.bench_rebuild [N] [--topic-prefix PREFIX] [--profile] [--workers W]

Fills a fresh requests topic with N (default 1,000,000) synthetic requests
(``bench/synthetic.py``) unless ``--topic-prefix`` names a filled one, rebuilds
a fresh DuckDB file from it, then runs ``bench/bench_core.py``'s decode+fold
over N generated records, back to back, so both see the same machine load.
Both report wall and CPU (every thread of the process, DuckDB's and librdkafka's too;
for the rebuild also its worker processes). The last line is JSON; ``rebuild_share`` is
``rebuild_rate / decode_fold_rate`` (wall): how close a rebuild comes to the fold alone.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import tempfile
import time
from pathlib import Path

from bench import bench_core
from bench.common import PARTITIONS, bench_settings
from bench.synthetic import produce_requests
from oncelog.broker.local import resolve_bootstrap
from oncelog.projector.rebuild import rebuild_from_requests
from oncelog.projector.store import Store
from oncelog.settings import Settings


def _cpu_with_children() -> float:
    """CPU seconds of this process and of its children that have ended (the refold's
    worker processes, joined before the rebuild returns)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def timed_rebuild(
    settings: Settings, path: Path, profile: bool, workers: int | None = None
) -> tuple[int, float, float]:
    """(records, wall s, CPU s) of one rebuild into a fresh file at ``path``."""
    assert settings.bootstrap_servers is not None
    kafka = settings.kafka_config(settings.bootstrap_servers)
    profiler = cProfile.Profile() if profile else None
    # Opened as `oncelog rebuild` opens it (the settings' checkpoint threshold; DuckDB's own
    # 16 MiB cost this refold 15 % of its rate).
    with Store(path, checkpoint_mb=settings.duckdb_checkpoint_mb) as store:
        wall, cpu = time.perf_counter(), _cpu_with_children()
        if profiler is None:
            n = rebuild_from_requests(settings, kafka, store, workers=workers)
        else:
            n = profiler.runcall(rebuild_from_requests, settings, kafka, store, workers=workers)
        wall, cpu = time.perf_counter() - wall, _cpu_with_children() - cpu
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)
    return n, wall, cpu


def timed_decode_fold(count: int) -> tuple[int, float, float]:
    """(records, wall s, CPU s) of bench_core's decode+fold over ``count`` generated records."""
    records = bench_core.generate(count)
    gc.collect()
    gc.freeze()  # as bench_core does: the input stands for librdkafka's buffers
    wall, cpu = time.perf_counter(), time.process_time()
    bench_core.decode_and_fold(records)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    gc.unfreeze()
    return len(records), wall, cpu


def main() -> None:
    """Fill (or reuse) a topic, rebuild, decode+fold; print both rates and their share."""
    parser = argparse.ArgumentParser()
    parser.add_argument("count", nargs="?", type=int, default=1_000_000)
    parser.add_argument("--topic-prefix", default=None, help="reuse a filled topic set")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--workers", type=int, default=None, help="refold processes (1: none)")
    args = parser.parse_args()
    bootstrap = resolve_bootstrap(Settings(), start=True)
    tmp = Path(tempfile.mkdtemp(prefix="oncelog-bench-rebuild-"))
    if args.topic_prefix is None:
        settings = bench_settings(bootstrap, tmp, "rebuild")
        produce_requests(settings, args.count)
        print(f"filled {settings.topic_prefix} with {args.count} requests", flush=True)
    else:
        settings = Settings(bootstrap_servers=bootstrap, topic_prefix=args.topic_prefix,
                            partitions=PARTITIONS)  # fmt: skip
    load_before = os.getloadavg()[0]
    n, wall, cpu = timed_rebuild(settings, tmp / "rebuilt.duckdb", args.profile, args.workers)
    print(f"rebuild --from requests: {n / wall:.0f} records/s over {n} "
          f"(wall {wall:.2f} s, CPU {cpu:.2f} s, {cpu / n * 1e6:.1f} us CPU per record)",
          flush=True)  # fmt: skip
    m, dwall, dcpu = timed_decode_fold(n)
    print(f"decode+fold: {m / dwall:.0f} records/s over {m} "
          f"(wall {dwall:.2f} s, CPU {dcpu:.2f} s, {dcpu / m * 1e6:.1f} us CPU per record)",
          flush=True)  # fmt: skip
    figures = {
        "rebuild_rate": round(n / wall, 1),
        "decode_fold_rate": round(m / dwall, 1),
        "rebuild_share": round((n / wall) / (m / dwall), 3),
        "rebuild_cpu_us": round(cpu / n * 1e6, 2),
        "decode_fold_cpu_us": round(dcpu / m * 1e6, 2),
        "cpu_share": round((dcpu / m) / (cpu / n), 3),
        "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
