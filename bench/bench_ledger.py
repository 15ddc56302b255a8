"""``make bench``: the ledger against raw Kafka on the same broker. Not a test.

Prints, in one run:
- claim and claim->complete latency p50/p99 for one sequential worker, next to a raw
  confluent-kafka produce->consume round trip (the ratio is the figure);
- sustained claim+complete cycles/s with 64 concurrent async workers;
- the projector's fold rate versus a raw consume of the same requests topic;
- rebuild records/s over N requests (default 1M);
- ``step_status`` p99 over a DuckDB of M history rows (default 10M).
The last line is one JSON object with the figures.

Usage: ``python bench/bench_ledger.py [--rebuild N] [--history M] [--cycles-seconds S]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from bench import bench_query
from bench.common import PARTITIONS, bench_broker, bench_settings, pct, serving
from bench.peers import workload
from bench.peers.oncelog_peer import OncelogPeer
from bench.synthetic import produce_requests
from oncelog.kafka.reader import high_watermarks
from oncelog.producer.client import LedgerClient
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.rebuild import rebuild_from_requests
from oncelog.projector.service import Projector
from oncelog.projector.store import Store
from oncelog.settings import Settings


def raw_round_trip(kafka: dict[str, Any], topic: str, n: int = 300) -> list[float]:
    """Produce one record, consume it back; n times, sequentially (ms)."""
    producer = Producer({**kafka, "linger.ms": 1, "acks": "all",
                         "enable.idempotence": True})  # fmt: skip
    consumer = Consumer({**kafka, "group.id": uuid.uuid4().hex,
                         "fetch.wait.max.ms": 5, "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, high_watermarks(consumer, topic, [0])[0])])
    out = []
    for i in range(n):
        began = time.perf_counter()
        producer.produce(topic, value=b"x" * 200, key=str(i).encode(), partition=0)
        producer.flush(10)
        while not consumer.consume(1, timeout=5):
            pass
        out.append((time.perf_counter() - began) * 1000)
    consumer.close()
    return out


def sequential_latency(settings: Settings, n: int = 300) -> tuple[list[float], list[float]]:
    """Claim latency and claim->complete cycle latency of one sequential worker (ms)."""
    claims, cycles = [], []
    with SyncLedgerClient(settings, worker_id="bench-seq", timeouts=Timeouts(60, 10)) as client:
        for i in range(n):
            began = time.perf_counter()
            claim = client.claim_execution("seq", f"k-{i}", tool_name="t", params={"i": i})
            claimed = time.perf_counter()
            client.complete_execution(claim.execution, claim.claim_token, {"ok": i})
            claims.append((claimed - began) * 1000)
            cycles.append((time.perf_counter() - began) * 1000)
    return claims, cycles


async def concurrent_cycles(settings: Settings, workers: int, seconds: float) -> float:
    """Sustained claim+complete cycles/s with ``workers`` async workers on one client."""
    async with LedgerClient(settings, timeouts=Timeouts(120, 20)) as client:
        peer = OncelogPeer(client)
        _, rate = await workload.timed_window(
            workers, seconds, lambda w, i: workload.cycle(peer, f"chan-{w}", f"k-{i}", i)
        )
        return rate


def raw_consume_rate(kafka: dict[str, Any], topic: str) -> float:
    """Records/s of a plain consume of every partition to its high watermark."""
    consumer = Consumer({**kafka, "group.id": uuid.uuid4().hex,
                         "enable.auto.commit": False})  # fmt: skip
    ends = high_watermarks(consumer, topic, range(PARTITIONS))
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    total, want = 0, sum(ends.values())
    began = time.perf_counter()
    while total < want:
        total += sum(1 for m in consumer.consume(10_000, timeout=1) if m.error() is None)
    rate = total / (time.perf_counter() - began)
    consumer.close()
    return rate


def projector_fold_rate(settings: Settings, total: int) -> float:
    """Records/s of the projector (decode, fold, publish, commit) over a filled topic."""
    assert settings.bootstrap_servers is not None
    folded = [0]
    done = threading.Event()

    def count(batch: Any) -> None:
        folded[0] += len(batch.audit) + len(batch.dead_letters)
        if folded[0] >= total:
            done.set()

    with Store(settings.db_path) as store:
        projector = Projector(settings, settings.bootstrap_servers, store, on_batch=count)
        projector.start()
        stop = threading.Event()
        thread = threading.Thread(target=projector.run, args=(stop,), daemon=True)
        began = time.perf_counter()
        thread.start()
        done.wait(timeout=1800)
        rate = folded[0] / (time.perf_counter() - began)
        stop.set()
        thread.join(timeout=60)
        projector.close()
    return rate


def rebuild_rate(settings: Settings, total: int) -> float:
    """Records/s of ``rebuild --from requests`` into a fresh DuckDB, opened as the command
    opens it (``oncelog/cli/rebuild_cmd.py``: the checkpoint threshold of the settings)."""
    assert settings.bootstrap_servers is not None
    kafka = settings.kafka_config(settings.bootstrap_servers)
    path = settings.db_path.with_suffix(".rebuild.duckdb")
    with Store(path, checkpoint_mb=settings.duckdb_checkpoint_mb) as store:
        began = time.perf_counter()
        n = rebuild_from_requests(settings, kafka, store)
        return n / (time.perf_counter() - began)


def main() -> None:
    """Run every measurement and print the figures; the last line is JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rebuild", type=int, default=1_000_000)
    parser.add_argument("--fold", type=int, default=200_000)
    parser.add_argument("--history", type=int, default=10_000_000)
    parser.add_argument("--cycles-seconds", type=float, default=20.0)
    args = parser.parse_args()
    with bench_broker() as broker:  # stopped afterwards only if started here
        _measure(args, broker.bootstrap)


def _measure(args: argparse.Namespace, bootstrap: str) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="oncelog-bench-"))
    figures: dict[str, float] = {}
    live = bench_settings(bootstrap, tmp, "live")
    raw = raw_round_trip(live.kafka_config(bootstrap), live.deadletter_topic)
    figures["raw_rtt_p50_ms"] = statistics.median(raw)
    print(f"raw produce->consume RTT: p50 {figures['raw_rtt_p50_ms']:.2f} ms, "
          f"p99 {pct(raw, 0.99):.2f} ms", flush=True)  # fmt: skip
    _live_figures(live, figures, args.cycles_seconds)
    filled = bench_settings(bootstrap, tmp, "fold")
    produce_requests(filled, args.fold)
    figures["raw_consume_rate"] = raw_consume_rate(
        filled.kafka_config(bootstrap), filled.requests_topic
    )
    figures["fold_rate"] = projector_fold_rate(filled, args.fold)
    share = 100 * figures["fold_rate"] / figures["raw_consume_rate"]
    print(f"projector fold rate {figures['fold_rate']:.0f}/s vs raw consume "
          f"{figures['raw_consume_rate']:.0f}/s ({share:.0f}%)", flush=True)  # fmt: skip
    big = bench_settings(bootstrap, tmp, "rebuild")
    produce_requests(big, args.rebuild)
    figures["rebuild_rate"] = rebuild_rate(big, args.rebuild)
    print(f"rebuild --from requests: {figures['rebuild_rate']:.0f} records/s over "
          f"{args.rebuild} requests", flush=True)  # fmt: skip
    figures["step_status_p99_ms"] = _query_p99(tmp, args.history)
    keys = ["claim_p50_ms", "claim_p99_ms", "raw_rtt_p50_ms", "cycles_per_s", "fold_rate",
            "raw_consume_rate", "rebuild_rate", "step_status_p99_ms"]  # fmt: skip
    print(json.dumps({k: round(figures[k], 3) for k in keys}))


def _live_figures(settings: Settings, figures: dict[str, float], seconds: float) -> None:
    """Latency and throughput against ``oncelog serve`` in a process of its own, as deployed."""
    with serving(settings):
        claims, cycles = sequential_latency(settings)
        figures["claim_p50_ms"] = statistics.median(claims)
        figures["claim_p99_ms"] = pct(claims, 0.99)
        ratio = figures["claim_p50_ms"] / figures["raw_rtt_p50_ms"]
        print(f"claim latency (1 sequential worker): p50 {figures['claim_p50_ms']:.2f} ms, "
              f"p99 {figures['claim_p99_ms']:.2f} ms; claim->complete p50 "
              f"{statistics.median(cycles):.2f} ms, p99 {pct(cycles, 0.99):.2f} ms; "
              f"ratio to raw RTT {ratio:.2f}x", flush=True)  # fmt: skip
        figures["cycles_per_s"] = asyncio.run(concurrent_cycles(settings, 64, seconds))
        print(f"64 async workers: {figures['cycles_per_s']:.0f} claim+complete cycles/s",
              flush=True)  # fmt: skip


def _query_p99(tmp: Path, rows: int) -> float:
    path = tmp / "history.duckdb"
    began = time.perf_counter()
    bench_query.build(path, rows)
    built = time.perf_counter() - began
    times = bench_query.lookups(path)
    p99 = pct(times, 0.99)
    print(f"step_status over {rows} history rows (built in {built:.0f} s): "
          f"p50 {statistics.median(times):.2f} ms, p99 {p99:.2f} ms", flush=True)  # fmt: skip
    return p99


if __name__ == "__main__":
    main()
