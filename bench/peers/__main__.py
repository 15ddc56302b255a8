"""``make bench-peers``: oncelog next to a plain Postgres table and DBOS. Not a test.

    python -m bench.peers [--quick] [--seconds S] [--rounds R] [--rebuild-requests N]
                          [--decode-fold-records N] [--tracing]

On the same broker and machine: the raw Kafka round trip; oncelog (``oncelog serve`` in a
process of its own); the plain table over asyncpg with ``synchronous_commit`` on and off;
DBOS when installed. Each peer gets the same workload (``bench/peers/workload.py``) and
its CPU per process is read from /proc. oncelog and the two tables run in interleaved rounds
(default 2), and each reports its rounds' median, so that the machine's drift over the run
(±15-20 % here) does not favour whichever ran in a fast minute; DBOS runs once. Then
``rebuild --from requests`` and the in-process decode+fold rate. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from bench.bench_ledger import raw_round_trip, rebuild_rate
from bench.common import TRACING_ENV, bench_broker, bench_settings, serving, tracing_wanted
from bench.peers import cpu, dbos_peer, jit, postgres, summary, workload
from bench.peers.oncelog_peer import OncelogPeer
from bench.peers.workload import PeerResult, Workload
from bench.synthetic import produce_requests
from oncelog.producer.client import LedgerClient
from oncelog.producer.dispatch import Timeouts
from oncelog.settings import Settings

ASYNCPG_HINT = "pip install -c constraints.txt -e '.[bench]'   (or: make bench-peers)"
QUICK = Workload(warmup_cycles=50, warmup_seconds=1.0, sequential=200,
                 window_seconds=3.0, mix_seconds=3.0)  # fmt: skip
Results = dict[str, PeerResult | None]


async def _oncelog(
    settings: Settings, load: Workload, readers: cpu.Readers, broker_pid: int | None
) -> PeerResult:
    async with LedgerClient(settings, timeouts=Timeouts(120, 20)) as client:
        peer = OncelogPeer(client)
        steps = workload.fresh_cycles(peer, f"jit-{uuid.uuid4().hex[:6]}")
        warmed_s = await jit.warm(broker_pid, lambda s: workload.window(load.workers, s, steps))
        result = await workload.run(peer, "oncelog", load, readers)
        result.warmup_s = warmed_s
        return result


def run_oncelog(settings: Settings, load: Workload) -> PeerResult:
    """oncelog against ``oncelog serve`` in a process of its own, on a broker past its JIT."""
    assert settings.bootstrap_servers is not None
    with serving(settings) as serve:
        readers = cpu.oncelog_readers(serve.pid, settings.bootstrap_servers)
        broker_pid = cpu.our_broker_pid(settings.bootstrap_servers)
        return asyncio.run(_oncelog(settings, load, readers, broker_pid))


async def _table(
    dsn: str, name: str, sync: bool, load: Workload, readers: cpu.Readers
) -> PeerResult:
    from bench.peers.pg_table import PlainTable  # noqa: PLC0415  (optional: the bench extra)

    table = await PlainTable.connect(dsn, load.workers, synchronous_commit=sync)
    try:
        return await workload.run(table, name, load, readers)
    finally:
        await table.close()


async def _create_database(dsn: str, name: str) -> None:
    import asyncpg  # noqa: PLC0415  (optional: the bench extra)

    connection = await asyncpg.connect(dsn)
    try:
        await connection.execute(f"CREATE DATABASE {name}")
    finally:
        await connection.close()


def run_dbos(pg: postgres.Postgres, load: Workload, readers: cpu.Readers) -> PeerResult | None:
    """DBOS on its own system database of the same server; None (and why) when it can't run."""
    reason = dbos_peer.missing()
    if reason is not None:
        print(f"dbos: skipped, reported as null: {reason}", flush=True)
        return None
    try:
        asyncio.run(_create_database(pg.dsn(), "dbos_sys"))
        with dbos_peer.launched(pg.dsn("dbos_sys"), load.workers) as peer:
            return asyncio.run(workload.run(peer, "dbos", load, readers))
    except Exception as exc:  # an optional peer: report, don't abort the other figures
        print(f"dbos: failed, reported as null: {exc!r}", flush=True)
        return None


def throwaway_postgres(stack: contextlib.ExitStack) -> postgres.Postgres | None:
    """One PostgreSQL for every round of the table peers and DBOS; None (and why) when
    asyncpg or PostgreSQL is missing."""
    if importlib.util.find_spec("asyncpg") is None:
        print(f"pg, pg_off, dbos: skipped: asyncpg is not installed; install it with:\n"
              f"  {ASYNCPG_HINT}", flush=True)  # fmt: skip
        return None
    try:
        return stack.enter_context(postgres.throwaway())
    except postgres.PostgresMissingError as exc:
        print(f"pg, pg_off, dbos: skipped: {exc}", flush=True)
        return None


def run_tables(pg: postgres.Postgres, load: Workload) -> Results:
    """The plain table with synchronous_commit on (``pg``), then off (``pg_off``)."""
    results: Results = {}
    for name, sync in (("pg", True), ("pg_off", False)):
        results[name] = asyncio.run(_table(pg.dsn(), name, sync, load, _pg_readers(pg)))
    return results


def _pg_readers(pg: postgres.Postgres) -> cpu.Readers:
    return {"client": cpu.own_ticks, "postgres": lambda: cpu.tree_ticks(pg.pid)}


def decode_fold_rate(records: int) -> float | None:
    """``bench/bench_core.py`` in a process of its own (it freezes 1M records out of the GC)."""
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-m", "bench.bench_core", str(records)],
                         cwd=root, capture_output=True, text=True, check=True)  # fmt: skip
    return summary.parse_decode_fold(out.stdout)


def _print_peer(result: PeerResult | None) -> None:
    if result is not None:
        print(summary.peer_line(result), flush=True)


def _args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="short windows, small counts")
    parser.add_argument("--seconds", type=float, default=20.0, help="each 64-worker window")
    parser.add_argument("--rounds", type=int, default=None, help="default 2 (--quick: 1)")
    parser.add_argument("--rebuild-requests", type=int, default=None, help="default 1,000,000")
    parser.add_argument("--decode-fold-records", type=int, default=None, help="default 1,000,000")
    parser.add_argument(
        "--tracing",
        action="store_true",
        help="OpenTelemetry on in clients and serve (bench/traced.py; ONCELOG_BENCH_TRACING=1)",
    )
    args = parser.parse_args()
    if args.tracing or tracing_wanted():
        from bench import traced  # noqa: PLC0415  # the OpenTelemetry SDK, only when asked

        os.environ[TRACING_ENV] = "1"  # serve inherits it (bench.common.serving)
        traced.install()
    small = 20_000 if args.quick else 1_000_000
    args.rebuild_requests = args.rebuild_requests or small
    args.decode_fold_records = args.decode_fold_records or small
    args.rounds = args.rounds or (1 if args.quick else 2)
    return args


def main() -> None:
    """Every peer, the offline rates, the report; the last line is JSON."""
    args = _args()
    load = QUICK if args.quick else Workload(window_seconds=args.seconds, mix_seconds=args.seconds)
    tmp = Path(tempfile.mkdtemp(prefix="oncelog-bench-peers-"))
    try:
        with bench_broker() as broker:  # stopped afterwards only if started here
            _measure(args, load, broker.bootstrap, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _measure(args: argparse.Namespace, load: Workload, bootstrap: str, tmp: Path) -> None:
    load_before = os.getloadavg()[0]
    probe = bench_settings(bootstrap, tmp, "peers-rtt")
    kafka = probe.kafka_config(bootstrap)
    raw_round_trip(kafka, probe.deadletter_topic, 100)  # warm-up: a fresh broker JITs
    cold = raw_round_trip(kafka, probe.deadletter_topic)
    print(f"raw produce->consume RTT p50 {statistics.median(cold):.2f} ms (before oncelog's "
          "run)", flush=True)  # fmt: skip
    with contextlib.ExitStack() as stack:
        pg = throwaway_postgres(stack)
        rounds, raw = _rounds(args.rounds, load, tmp, pg=pg, probe=probe)
        dbos = None if pg is None else run_dbos(pg, load, _pg_readers(pg))
        _print_peer(dbos)
    results: Results = {name: summary.combine(runs) if runs else None
                        for name, runs in rounds.items()}  # fmt: skip
    results["dbos"] = None if dbos is None else summary.combine([dbos])  # one round: slow
    for name in ("oncelog", "pg", "pg_off"):
        _print_peer(results[name])
    big = bench_settings(bootstrap, tmp, "rebuild")
    produce_requests(big, args.rebuild_requests)
    rebuild = rebuild_rate(big, args.rebuild_requests)
    print(f"rebuild --from requests: {rebuild:.0f} records/s over {args.rebuild_requests}")
    decode = decode_fold_rate(args.decode_fold_records)
    print(f"decode+fold: {decode} records/s over {args.decode_fold_records}", flush=True)
    figures = summary.summary(raw, results, rebuild, decode)
    figures["raw_rtt_before_p50_ms"] = round(statistics.median(cold), 3)
    # Other work on the machine skews every figure: say how busy it was.
    figures["load_avg_1m"] = [load_before, os.getloadavg()[0]]
    print(json.dumps(figures))


def _rounds(
    count: int, load: Workload, tmp: Path, *, pg: postgres.Postgres | None, probe: Settings
) -> tuple[dict[str, list[PeerResult]], list[float]]:
    """oncelog, pg, pg_off, then again, ``count`` times: a machine that speeds up or slows
    down over the run moves every peer alike. Each oncelog round has a topic set and
    projector of its own. Also the raw round trip on the broker oncelog's first round warmed."""
    assert probe.bootstrap_servers is not None
    bootstrap, kafka = probe.bootstrap_servers, probe.kafka_config(probe.bootstrap_servers)
    rounds: dict[str, list[PeerResult]] = {"oncelog": [], "pg": [], "pg_off": []}
    raw: list[float] = []
    for r in range(count):
        tag = f"round {r + 1}/{count}: "
        rounds["oncelog"].append(run_oncelog(bench_settings(bootstrap, tmp, f"peers{r}"), load))
        print(tag + summary.peer_line(rounds["oncelog"][-1]), flush=True)
        if not raw:
            # On the broker that oncelog's run warmed (its JIT done): the fair reference for
            # oncelog's claim latency. A cold one's was up to 3x slower.
            raw = raw_round_trip(kafka, probe.deadletter_topic)
            print(f"raw produce->consume RTT p50 {statistics.median(raw):.2f} ms (warm broker)",
                  flush=True)  # fmt: skip
        if pg is not None:
            for name, result in run_tables(pg, load).items():
                if result is not None:
                    rounds[name].append(result)
                    print(tag + summary.peer_line(result), flush=True)
    return rounds, raw


if __name__ == "__main__":
    main()
