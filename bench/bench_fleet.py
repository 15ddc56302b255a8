"""A fleet of clients on one ledger: does a quiet client pay for a busy one? Not a test.

    python -m bench.bench_fleet [--quick] [--idle N] [--seconds S] [--sequential N]

One busy client and ``--idle`` idle clients (15), each in its own process
(:mod:`bench.fleet_clients`), against ``oncelog serve`` children, on a fresh topic set
with the default partition counts (6 requests partitions, 32 reply partitions). The
busy client warms up first, then the idle ones start (one claim + complete a second
each), then the busy client runs claim + complete cycles of fresh steps with several
async workers for a fixed window, and ``--sequential`` claims one after another for
their latency. Each idle client reports the share of the fleet's decisions it
received while it listened (records its listener consumed / records published).

The same load runs three times: the busy client alone (the single-client figure),
with the idle clients and one projector, with the idle clients and two projectors in
one consumer group. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from bench.common import bench_settings, on_broker
from oncelog.projector import process
from oncelog.settings import Settings

READY_TIMEOUT_S = 180.0


def client_env(settings: Settings) -> dict[str, str]:
    """The environment of a client process: the fleet's broker and topics."""
    return {
        **os.environ,
        "ONCELOG_BOOTSTRAP_SERVERS": settings.bootstrap_servers or "",
        "ONCELOG_TOPIC_PREFIX": settings.topic_prefix,
        "ONCELOG_PARTITIONS": str(settings.partitions),
    }


def spawn_client(settings: Settings, role: str, *args: str) -> subprocess.Popen[str]:
    """``python -m bench.fleet_clients ROLE ARGS``, talking line by line on stdin/stdout."""
    return subprocess.Popen(
        [sys.executable, "-m", "bench.fleet_clients", role, *args],
        env=client_env(settings), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


def _stdout(proc: subprocess.Popen[str]) -> IO[str]:
    assert proc.stdout is not None
    return proc.stdout


def expect_ready(proc: subprocess.Popen[str]) -> None:
    """Block until the client prints ``ready`` (it fails loudly if it exits first)."""
    line = _stdout(proc).readline().strip()
    if line != "ready":
        raise RuntimeError(f"{proc.args!r} said {line!r} instead of ready (exit {proc.poll()})")


def tell(proc: subprocess.Popen[str], line: str) -> None:
    """Write one command line to the client."""
    assert proc.stdin is not None
    proc.stdin.write(line + "\n")
    proc.stdin.flush()


def figures_of(proc: subprocess.Popen[str]) -> dict[str, Any]:
    """The client's last line, its JSON figures, once it exits."""
    out, _ = proc.communicate(timeout=READY_TIMEOUT_S)
    lines = [line for line in out.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{proc.args!r} exited {proc.returncode}: {out[-2000:]}")
    figures: dict[str, Any] = json.loads(lines[-1])
    return figures


@contextlib.contextmanager
def projectors(settings: Settings, count: int) -> Iterator[None]:
    """``count`` ``oncelog serve --no-http`` children in one group: each its own
    ``ONCELOG_PROJECTOR_ID``, DuckDB file and port."""
    children = []
    try:
        for i in range(count):
            own = settings.model_copy(
                update={"db_path": settings.db_path.with_suffix(f".{i}.duckdb"),
                        "http_port": 18765 + i}
            )  # fmt: skip
            env = {**process.serve_env(own), "ONCELOG_PROJECTOR_ID": f"projector-{i}"}
            log = own.db_path.with_suffix(".serve.log")
            children.append(process.spawn(["-m", "oncelog", "serve", "--no-http"], log, env))
        yield
    finally:
        for child in children:
            process.stop(child)


def run_fleet(settings: Settings, args: argparse.Namespace, idle: int) -> dict[str, Any]:
    """The busy client (warmed up first) and ``idle`` idle clients; everyone's figures."""
    busy = spawn_client(settings, "busy", "--seconds", str(args.seconds),
                        "--workers", str(args.workers), "--sequential", str(args.sequential),
                        "--warmup", str(args.warmup))  # fmt: skip
    idlers: list[subprocess.Popen[str]] = []
    try:
        expect_ready(busy)
        idlers = [spawn_client(settings, "idle", "--period", str(args.period)) for _ in range(idle)]
        for proc in idlers:
            expect_ready(proc)
        tell(busy, "go")
        figures = figures_of(busy)
        for proc in idlers:
            tell(proc, "stop")
        shares = [figures_of(proc) for proc in idlers]
    finally:
        for proc in [busy, *idlers]:
            if proc.poll() is None:
                proc.kill()
    return {"busy": figures, "idle": shares}


def scenario(
    bootstrap: str, tmp: Path, args: argparse.Namespace, name: str, *, idle: int, count: int
) -> dict[str, Any]:
    """One run on a fresh topic set with ``count`` projectors."""
    settings = bench_settings(bootstrap, tmp, name)
    with projectors(settings, count):
        result = run_fleet(settings, args, idle)
    busy = result["busy"]
    shares = [client["share"] for client in result["idle"]]
    return {
        "busy_claim_p50_ms": busy["claim_p50_ms"],
        "busy_cycles_per_s": busy["cycles_per_s"],
        "busy_reply_partition": busy["reply_partition"],
        "idle_client_share": max(shares, default=0.0),
        "idle_shares": shares,
        "idle_reply_partitions": [client["reply_partition"] for client in result["idle"]],
        "fleet_decisions": max((c["fleet_decisions"] for c in result["idle"]), default=0),
        "reply_partitions": settings.reply_partitions,
        "partitions": settings.partitions,
    }


def measure(args: argparse.Namespace, bootstrap: str, tmp: Path) -> dict[str, Any]:
    """Alone, then with the idle fleet on one projector, then on two."""
    alone = scenario(bootstrap, tmp, args, "alone", idle=0, count=1)
    one = scenario(bootstrap, tmp, args, "fleet1", idle=args.idle, count=1)
    two = scenario(bootstrap, tmp, args, "fleet2", idle=args.idle, count=2)
    keys = ("idle_client_share", "busy_claim_p50_ms", "busy_cycles_per_s")
    return {
        **{key: one[key] for key in keys},
        "single_claim_p50_ms": alone["busy_claim_p50_ms"],
        "single_cycles_per_s": alone["busy_cycles_per_s"],
        "p50_vs_single": round(one["busy_claim_p50_ms"] / alone["busy_claim_p50_ms"], 3),
        "two_projectors": {
            **{key: two[key] for key in keys},
            "p50_vs_single": round(two["busy_claim_p50_ms"] / alone["busy_claim_p50_ms"], 3),
        },
        "idle_clients": args.idle,
        "runs": {"alone": alone, "one_projector": one, "two_projectors": two},
    }


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    """The options; ``--quick`` shrinks every phase (for the test)."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_fleet", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help="short phases; 3 idle clients, a cycle every 5 s"
    )
    parser.add_argument("--idle", type=int, default=15, help="idle clients")
    parser.add_argument("--seconds", type=float, default=10.0, help="the busy client's window")
    parser.add_argument("--workers", type=int, default=32, help="the busy client's workers")
    parser.add_argument("--sequential", type=int, default=1000, help="sequential claims")
    parser.add_argument("--warmup", type=int, default=200, help="warm-up cycles")
    parser.add_argument("--period", type=float, default=1.0, help="an idle client's cycle, s")
    args = parser.parse_args(argv)
    if args.quick:
        args.idle, args.seconds, args.workers = min(args.idle, 3), 1.0, 8
        args.sequential, args.warmup, args.period = 50, 20, 5.0
    return args


def main(argv: list[str] | None = None) -> None:
    """Run the three fleets and print the figures; the last line is JSON."""
    args = parse(argv)
    print(json.dumps(on_broker("fleet", lambda bootstrap, tmp: measure(args, bootstrap, tmp))))


if __name__ == "__main__":
    main()
