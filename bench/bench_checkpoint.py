"""LangGraph checkpoint ``put`` and ``get_tuple`` latency: OncelogSaver beside LangGraph's own.

Usage: ``python -m bench.bench_checkpoint [N]`` (N puts and N reads per saver, default 300).

One run, one machine: the oncelog saver (the local broker, a fresh topic set, ``oncelog
serve`` with its query API in a process of its own), LangGraph's ``SqliteSaver`` on a
file, and its ``PostgresSaver`` on a throwaway PostgreSQL (Debian's server binaries;
left out, and said so, when they or the ``bench`` extra are missing). Each saver gets the
same workload on one thread, sequentially: N checkpoints of a ~1 KB state, each with its
parent, then N ``get_tuple`` of the latest, then N/5 puts each read back at once (for
oncelog that read waits until ``serve`` folded the put). The figures are wall-clock per
call, p50 and p99 in ms. Then a 20-superstep agent with two tools through the ledger
(:mod:`bench.agent_checkpoint`) runs on each saver: its wall time (the median of three
runs) and the saver's calls per superstep. The last line is one JSON document.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint

from bench.agent_checkpoint import run_agent
from bench.common import bench_broker, bench_settings, pct
from oncelog.integrations.langgraph import OncelogSaver
from oncelog.net import free_port
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector import process
from oncelog.settings import Settings

STATE = {"messages": ["x" * 100] * 10, "step": 0}


def _measure(saver: BaseCheckpointSaver[Any], n: int) -> dict[str, float]:
    """p50/p99 (ms) of n puts, then of n reads of the latest checkpoint."""
    thread = f"bench-{uuid.uuid4().hex}"
    parent: str | None = None
    put_ms: list[float] = []
    for step in range(n):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {**STATE, "step": step}
        versions = {k: saver.get_next_version(None, None) for k in checkpoint["channel_values"]}
        checkpoint["channel_versions"] = versions
        conf: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
        if parent is not None:
            conf["checkpoint_id"] = parent
        began = time.perf_counter()
        stored = saver.put({"configurable": conf}, checkpoint, {"step": step}, versions)
        put_ms.append((time.perf_counter() - began) * 1000)
        parent = stored["configurable"]["checkpoint_id"]
    get_ms = [_read_ms(saver, thread, n - 1) for _ in range(n)]
    # A read right after each put: for oncelog it waits until serve has folded the put.
    own_ms: list[float] = []
    for step in range(n, n + max(1, n // 5)):
        checkpoint = empty_checkpoint()
        checkpoint["channel_values"] = {**STATE, "step": step}
        versions = {k: saver.get_next_version(None, None) for k in checkpoint["channel_values"]}
        checkpoint["channel_versions"] = versions
        conf = {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": parent}
        stored = saver.put({"configurable": conf}, checkpoint, {"step": step}, versions)
        parent = stored["configurable"]["checkpoint_id"]
        own_ms.append(_read_ms(saver, thread, step))
    return {
        "put_p50_ms": round(pct(put_ms, 0.5), 2),
        "put_p99_ms": round(pct(put_ms, 0.99), 2),
        "get_tuple_p50_ms": round(pct(get_ms, 0.5), 2),
        "get_tuple_p99_ms": round(pct(get_ms, 0.99), 2),
        "get_after_put_p50_ms": round(pct(own_ms, 0.5), 2),
        "get_after_put_p99_ms": round(pct(own_ms, 0.99), 2),
    }


def _read_ms(saver: BaseCheckpointSaver[Any], thread: str, step: int) -> float:
    """One get_tuple of the thread's latest checkpoint (which must be ``step``), in ms."""
    began = time.perf_counter()
    found = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
    took = (time.perf_counter() - began) * 1000
    assert found is not None
    assert found.checkpoint["channel_values"]["step"] == step
    return took


@dataclass(frozen=True)
class _Ledger:
    """The run's ledger: settings and the query URL of its ``serve``."""

    settings: Settings
    url: str


@contextlib.contextmanager
def _ledger(tmp: Path) -> Iterator[_Ledger]:
    """The local broker, a fresh topic set and ``serve`` in a process of its own."""
    with bench_broker() as broker:
        settings = bench_settings(broker.bootstrap, tmp, "checkpoint")
        settings = settings.model_copy(update={"http_port": free_port()})
        log = tmp / "serve.log"
        serve = process.start_serve(settings, log)
        try:
            url = f"http://127.0.0.1:{settings.http_port}"
            process.wait_http(serve, f"{url}/healthz", log)
            yield _Ledger(settings, url)
        finally:
            process.stop(serve)


@contextlib.contextmanager
def _oncelog(tmp: Path, ledger: _Ledger) -> Iterator[BaseCheckpointSaver[Any]]:
    with OncelogSaver(ledger.settings, query_url=ledger.url) as saver:
        yield saver


@contextlib.contextmanager
def _sqlite(tmp: Path, ledger: _Ledger) -> Iterator[BaseCheckpointSaver[Any]]:
    from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: PLC0415 - the bench extra

    with SqliteSaver.from_conn_string(str(tmp / "checkpoints.sqlite")) as saver:
        yield saver


@contextlib.contextmanager
def _postgres(tmp: Path, ledger: _Ledger) -> Iterator[BaseCheckpointSaver[Any]]:
    from langgraph.checkpoint.postgres import PostgresSaver  # noqa: PLC0415 - the bench extra

    from bench.peers.postgres import throwaway  # noqa: PLC0415 - only when measured

    with throwaway() as pg, PostgresSaver.from_conn_string(pg.dsn()) as saver:
        saver.setup()
        yield saver


_Make = Callable[[Path, _Ledger], contextlib.AbstractContextManager[BaseCheckpointSaver[Any]]]
SAVERS: dict[str, _Make]
SAVERS = {"oncelog": _oncelog, "sqlite": _sqlite, "postgres": _postgres}


def main(n: int) -> dict[str, Any]:
    """Every saver's figures (or why it was left out), printed as a table and JSON."""
    results: dict[str, Any] = {"n": n, "cores": os.cpu_count(), "load": os.getloadavg()}
    with (
        tempfile.TemporaryDirectory(prefix="oncelog-bench-ledger-") as home,
        _ledger(Path(home)) as ledger,
        SyncLedgerClient(ledger.settings) as client,
    ):
        for name, make in SAVERS.items():
            results[name] = _one(name, make, ledger, client, n)
            print(f"{name:9s} {results[name]}", flush=True)
    print(json.dumps(results, sort_keys=True))
    return results


def _one(name: str, make: _Make, ledger: _Ledger, client: SyncLedgerClient, n: int) -> Any:
    """One saver's calls, then the agent's runs (the median of three by wall time)."""
    with tempfile.TemporaryDirectory(prefix=f"oncelog-bench-{name}-") as tmp:
        try:
            with make(Path(tmp), ledger) as saver:
                _measure(saver, min(n, 20))  # warm up: connections, caches, JIT-less paths
                figures = _measure(saver, n)
                run_agent(saver, client)  # warm up the graph's and the ledger's paths
                runs = sorted((run_agent(saver, client) for _ in range(3)), key=_wall)
                return {**figures, **runs[1]}
        except (ImportError, RuntimeError) as exc:
            return {"left_out": f"{type(exc).__name__}: {exc}"}


def _wall(run: dict[str, Any]) -> float:
    return float(run["agent_wall_ms"])


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
