"""Where one sequential claim's time goes, stage by stage, on a warm broker. Not a test.

    python -m bench.bench_claim_path [--claims N]

``oncelog serve`` runs as a child, as ``make bench-peers`` runs it, with timestamps
(``time.time_ns``, the wall clock the processes of one machine share) taken around its
fold and its publishing; this process is the async client, timed around its send, its
listener's read and the call's resumption. After the broker's JIT is quiet (as ``make
bench-peers`` waits), N claims of fresh operations one at a time, each split into:

- ``build``: the call's start to the request's send (building and checking the claim);
- ``to_projector``: the send to ``serve``'s batch (the first hop, consuming included);
- ``fold``: ``serve``'s fold of that one-record batch (decode, checks, judge);
- ``to_published``: the fold's end to its decision and snapshot queued (state cache, encoding);
- ``to_listener``: queued to the client's listener holding the batch (the second hop);
- ``listener``: the listener decoding it;
- ``to_loop``: the listener's hand-off to the event loop running the settling callback;
- ``to_task``: that callback to the call's task resumed;
- ``to_caller``: the task resumed to the caller holding its ``Claim`` (interpreting it).

Medians in microseconds; ``make bench-echo`` gives the two hops with no work at all. The
stages are found by patching the timed functions of this process and of the child: the
figures are for reading, not a contract. The last line is JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import os
import runpy
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.common import bench_settings, on_broker
from bench.peers import cpu, jit, workload
from bench.peers.oncelog_peer import OncelogPeer
from oncelog.producer import dispatch, listener
from oncelog.producer.client import LedgerClient
from oncelog.producer.dispatch import Timeouts
from oncelog.projector import batch, process, publisher, service
from oncelog.settings import Settings

_STAMPS_ENV = "ONCELOG_BENCH_STAMPS"
_WORKERS = 64

Stamps = dict[str, list[Any]]


def _wrap(owner: Any, name: str, on_return: Callable[[int, int], None]) -> None:
    """Replace ``owner.name`` with a wrapper that hands ``on_return`` (entry, exit) in ns."""
    inner = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        began = time.time_ns()
        try:
            return inner(*args, **kwargs)
        finally:
            on_return(began, time.time_ns())

    setattr(owner, name, timed)


# --- the child: serve with stamps -------------------------------------------------------


def serve_stamped(args: list[str]) -> None:
    """``oncelog serve ARGS``, keeping (batch entry, fold end, published, size) per batch in
    the file ``$ONCELOG_BENCH_STAMPS``, written as ``serve`` stops (and every 1,000 batches,
    should it not stop cleanly)."""
    out = Path(os.environ[_STAMPS_ENV])
    folds: list[int] = []
    published: list[int] = []
    rows: list[tuple[int, int, int, int]] = []
    _wrap(batch.BatchFolder, "fold", lambda _b, e: folds.append(e))
    _wrap(publisher.Publisher, "publish", lambda _b, e: published.append(e))
    process_batch = service.Projector._process

    def stamped(self: service.Projector, messages: list[Any]) -> None:
        began = time.time_ns()
        process_batch(self, messages)
        rows.append((began, folds[-1], published[-1], len(messages)))
        if len(rows) % 1000 == 0:
            out.write_text(json.dumps(rows))

    service.Projector._process = stamped  # type: ignore[method-assign]
    sys.argv = ["oncelog", *args]
    try:
        runpy.run_module("oncelog", run_name="__main__", alter_sys=True)
    finally:
        out.write_text(json.dumps(rows))


# --- this process: the client -----------------------------------------------------------


def _stamp_client() -> Stamps:
    """Patch the client's send, listener read, hand-off and resumption; their stamps."""
    stamps: Stamps = {"send": [], "read": [], "loop": [], "task": []}
    _wrap(dispatch.Dispatcher, "_send", lambda b, _e: stamps["send"].append(b))
    _wrap(listener.DecisionListener, "_answers", lambda b, e: stamps["read"].append((b, e)))
    _wrap(listener, "_settle_all", lambda b, _e: stamps["loop"].append(b))
    _wrap(dispatch.Dispatcher, "_traced", lambda b, _e: stamps["task"].append(b))
    return stamps


async def _claims(settings: Settings, count: int, stamps: Stamps) -> list[tuple[int, int]]:
    async with LedgerClient(settings, timeouts=Timeouts(60, 20)) as client:
        peer, run = OncelogPeer(client), uuid.uuid4().hex[:6]
        await workload.window(_WORKERS, 2.0, workload.fresh_cycles(peer, f"{run}-warm"))
        steps = workload.fresh_cycles(peer, f"{run}-jit")
        broker = cpu.our_broker_pid(settings.bootstrap_servers or "")
        await jit.warm(broker, lambda s: workload.window(_WORKERS, s, steps))
        for i in range(200):  # one at a time, untimed, so the timed ones start alike
            await client.claim_execution(f"{run}-w", f"k{i}", tool_name="t", params={"i": i})
        for values in stamps.values():
            values.clear()
        calls = []
        for i in range(count):
            began = time.time_ns()
            await client.claim_execution(f"{run}-s", f"k{i}", tool_name="t", params={"i": i})
            calls.append((began, time.time_ns()))
        return calls


def _inside(values: Sequence[Any], began: int, ended: int, at: Callable[[Any], int]) -> Any:
    """The first of ``values`` stamped inside (``began``, ``ended``), or None."""
    return next((v for v in values if began < at(v) < ended), None)


def _plain(stamp: int) -> int:
    return stamp


def _first(stamps: tuple[int, int]) -> int:
    return stamps[0]


def split(
    calls: Sequence[tuple[int, int]], stamps: Stamps, batches: Sequence[Sequence[int]]
) -> dict[str, list[float]]:
    """Each call's stages in µs, from the stamps that fall inside it (a call whose stamps
    are not all there, a re-send say, is left out)."""
    stages: dict[str, list[float]] = {}
    entries = [b[0] for b in batches]
    for began, ended in calls:
        sent = _inside(stamps["send"], began, ended, _plain)
        at = bisect.bisect_right(entries, sent or ended)
        batch = batches[at] if at < len(batches) and batches[at][0] < ended else None
        read = _inside(stamps["read"], began, ended, _first)
        loop = _inside(stamps["loop"], began, ended, _plain)
        task = _inside(stamps["task"], began, ended, _plain)
        if sent is None or batch is None or read is None or loop is None or task is None:
            continue
        marks = (began, sent, batch[0], batch[1], batch[2], read[0], read[1], loop, task, ended)
        for name, a, b in zip(STAGES, marks[:-1], marks[1:], strict=True):
            stages.setdefault(name, []).append((b - a) / 1000)
        stages.setdefault("total", []).append((ended - began) / 1000)
    return stages


STAGES = (
    "build", "to_projector", "fold", "to_published", "to_listener", "listener", "to_loop",
    "to_task", "to_caller",
)  # fmt: skip


def measure(count: int, bootstrap: str, tmp: Path) -> dict[str, Any]:
    """The split of ``count`` sequential claims against a stamped ``serve``."""
    settings = bench_settings(bootstrap, tmp, "claim-path")
    env = {**process.serve_env(settings), _STAMPS_ENV: str(tmp / "serve-stamps.json")}
    log = tmp / "serve.log"
    serve = process.spawn(
        ["-m", "bench.bench_claim_path", "--serve", "serve", "--no-http"], log, env
    )
    stamps = _stamp_client()
    try:
        calls = asyncio.run(_claims(settings, count, stamps))
    finally:
        process.stop(serve)
    batches = sorted(json.loads((tmp / "serve-stamps.json").read_text()))
    stages = split(calls, stamps, batches)
    medians = {k: round(statistics.median(v), 1) for k, v in stages.items()}
    return {"claims": count, "split": len(stages.get("total", [])), "p50_us": medians}


def main() -> None:
    """Run and print the medians; the last line is JSON (``--serve``: be the stamped serve)."""
    if len(sys.argv) > 1 and sys.argv[1] == "--serve":
        serve_stamped(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(prog="python -m bench.bench_claim_path", description=__doc__)
    parser.add_argument("--claims", type=int, default=500, help="sequential claims timed")
    args = parser.parse_args()
    figures = on_broker("claim-path", lambda bootstrap, tmp: measure(args.claims, bootstrap, tmp))
    for name, value in figures["p50_us"].items():
        print(f"{name:>14} {value:8.1f} us (p50)")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
