"""Check and measure the Rust prototype against the package's (mypyc-compiled) reader and fold.

Run from the clone's root with the project venv, after ``maturin develop --release`` (README.md):

    python bench/rust_core_prototype/driver.py check [N]           # equality over every record
    python bench/rust_core_prototype/driver.py time [N] [ROUNDS]    # perf_counter, interleaved
    CG=1 valgrind --tool=callgrind --instr-atstart=no ... driver.py warm {py,rs} {read,full,none} N
    valgrind --tool=callgrind ... driver.py bench N [--generate-only]  # bench_core, Rust swapped in
    valgrind --tool=callgrind ... driver.py bench-read {py,rs,none} N  # decoding only
"""

from __future__ import annotations

import dataclasses
import gc
import importlib
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the clone, for bench.bench_core

from bench import bench_core
from oncelog.referee.fold import PartitionClock
from oncelog.referee.fold import fold as py_fold
from oncelog.schemas.codec import decode_request as py_read

# The prototype's extension (maturin develop, README.md); untyped, and absent from CI's venv.
rs: Any = importlib.import_module("_oncelog_proto")

IMPLS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "py": (py_read, py_fold),
    "rs": (rs.read_request, rs.fold),
}


def same(a: Any, b: Any) -> bool:
    """Equal values of the same types, all the way down (tuples compare by value alone)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if dataclasses.is_dataclass(a):
        return all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    return bool(a == b)


def loop(
    records: list[tuple[bytes, int]], read: Callable[..., Any], fold: Callable[..., Any]
) -> dict[str, Any]:
    """bench_core.decode_and_fold, with the reader and the fold as arguments."""
    states: dict[str, Any] = {}
    clock = PartitionClock()
    get = states.get
    for data, broker_ts in records:
        request = read(data)
        clock, t = clock.advance(broker_ts)
        state, _ = fold(get(request.operation_id), request, t)
        if state is not None:
            states[request.operation_id] = state
    return states


def read_only(records: list[tuple[bytes, int]], read: Callable[..., Any]) -> None:
    for data, _ in records:
        read(data)


def empty(records: list[tuple[bytes, int]]) -> None:
    for _data, _ts in records:
        pass


def trace(records: list[tuple[bytes, int]], impl: str) -> list[tuple[Any, ...]]:
    """Per record (request, state after, decision, state kept?), then ("final", states)."""
    read, fold = IMPLS[impl]
    states: dict[str, Any] = {}
    clock = PartitionClock()
    out: list[tuple[Any, ...]] = []
    for data, broker_ts in records:
        request = read(data)
        clock, t = clock.advance(broker_ts)
        before = states.get(request.operation_id)
        state, decision = fold(before, request, t)
        out.append((request, state, decision, state is before))
        if state is not None:
            states[request.operation_id] = state
    out.append(("final", states))
    return out


def check(n: int) -> None:
    records = bench_core.generate(2 * n)
    # the whole input from the start, and its second half from no state (as the warm
    # harness measures it: operations cut in two, heartbeats on absent states, fenced tokens)
    for name, part in (("whole", records), ("second half", records[n:])):
        py, rust = trace(part, "py"), trace(part, "rs")
        bad = [i for i, (a, b) in enumerate(zip(py, rust, strict=True)) if not same(a, b)]
        outcomes = Counter(
            f"{d.kind}:{d.outcome}{'/retried' if d.retried else ''}" for _, _, d, _ in py[:-1]
        )
        print(
            f"{name}: {len(part):,} records, {len(bad)} differ (requests, states, decisions, "
            f"identity of unchanged states, final states)"
        )
        print("  " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
        if bad:
            i = bad[0]
            print("first difference at", i, "\n py:", py[i], "\n rs:", rust[i])
            sys.exit(1)
    print("(reads, handed to Python, folds, handed to Python):", rs.stats())


def warm(impl: str, what: str, n: int) -> None:
    """/tmp/cg/harness.py: warm up on n records, measure the next n (callgrind toggled)."""
    read, fold = IMPLS[impl]
    records = bench_core.generate(2 * n)
    warm_part, measured = records[:n], records[n:]
    run: Callable[[list[tuple[bytes, int]]], Any] = {
        "full": lambda r: loop(r, read, fold),
        "read": lambda r: read_only(r, read),
        "none": empty,
    }[what]
    run(warm_part)
    gc.collect()
    gc.freeze()
    if os.environ.get("CG"):
        subprocess.run(
            ["callgrind_control", "-i", "on", str(os.getpid())], check=True, capture_output=True
        )
    run(measured)
    if os.environ.get("CG"):
        subprocess.run(
            ["callgrind_control", "-i", "off", str(os.getpid())], check=True, capture_output=True
        )
    print("measured", len(measured), impl, what)


def timing(n: int, rounds: int) -> None:
    records = bench_core.generate(n)
    gc.collect()
    gc.freeze()
    results: dict[str, list[float]] = {}
    for _ in range(rounds):
        for impl in ("py", "rs"):
            read, fold = IMPLS[impl]
            for what in ("read", "full"):
                started = time.perf_counter()
                if what == "read":
                    read_only(records, read)
                else:
                    loop(records, read, fold)
                results.setdefault(f"{impl} {what}", []).append(time.perf_counter() - started)
    print(f"{len(records):,} records, {rounds} interleaved rounds; load: {os.getloadavg()}")
    for key, times in results.items():
        per = [t / len(records) * 1e6 for t in times]
        print(f"  {key}: median {statistics.median(per):.2f} us/record (min {min(per):.2f})")


def bench(argv: list[str]) -> None:
    """bench_core.py's own main, with the Rust reader and fold swapped in."""
    vars(bench_core).update(decode_request=rs.read_request, fold=rs.fold)
    sys.argv = ["bench_core.py", *argv]
    bench_core.main()


def bench_read(impl: str, n: int) -> None:
    """bench_core.main's steps with the decoding alone (subtract ``bench N --generate-only``)."""
    records = bench_core.generate(n)
    print(f"generated {len(records):,} records")
    gc.collect()
    gc.freeze()
    if impl == "none":  # the baseline: the same steps without decoding
        empty(records)
    else:
        read_only(records, IMPLS[impl][0])


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    if mode == "check":
        check(int(rest[0]) if rest else 10_000)
    elif mode == "warm":
        warm(rest[0], rest[1], int(rest[2]))
    elif mode == "time":
        timing(int(rest[0]) if rest else 200_000, int(rest[1]) if len(rest) > 1 else 5)
    elif mode == "bench-read":
        bench_read(rest[0], int(rest[1]))
    elif mode == "bench":
        bench(rest)
    else:
        raise SystemExit(__doc__)
