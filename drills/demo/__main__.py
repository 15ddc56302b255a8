"""``make demo``: broker, topics, ``oncelog serve``, a sample fleet, then the answers.

It starts the local broker (unless ``ONCELOG_BOOTSTRAP_SERVERS`` is set), creates
a fresh topic set, starts the projector with its query API as a subprocess, runs
20 workflows x 6 steps against a downstream that honours idempotency keys, with
a crash after an effect, a lost completion response and a paused "zombie"
worker injected; then prints a timeline, ``status`` as of two offsets, the
suspected duplicates, the downstream's effect counts and ``verify``; and stops
what it started.
"""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

from rich.console import Console

from drills.demo.fleet import CRASH_AFTER_EFFECT, LOST_RESPONSE, run_fleet
from drills.sample import downstream
from oncelog.broker.local import LocalBroker, resolve_bootstrap
from oncelog.cli import query_cmd
from oncelog.errors import LedgerError
from oncelog.net import free_port
from oncelog.projector import process
from oncelog.projector.rebuild import verify
from oncelog.projector.store import Store
from oncelog.query.source import HttpSource
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

console = Console(highlight=False, soft_wrap=True)


def _start_serve(settings: Settings, log: Path) -> subprocess.Popen[bytes]:
    proc = process.start_serve(settings, log)
    process.wait_http(proc, f"http://127.0.0.1:{settings.http_port}/healthz", log)
    return proc


def _wait_caught_up(source: HttpSource, channel: str, requests: int) -> None:
    deadline = time.monotonic() + 60
    while len(source.timeline(channel, 1000)) < requests:
        if time.monotonic() > deadline:
            raise LedgerError(f"the projection of {channel} did not catch up")
        time.sleep(0.1)  # the projection commits right after publishing


def _show(settings: Settings, url: str, ds: downstream.Downstream) -> None:
    run, step = CRASH_AFTER_EFFECT
    console.rule(f"timeline of {run} (its worker crashed after charging, step {step})")
    query_cmd.timeline(run, limit=1000, db=None, url=url, as_json=False)
    run, step = LOST_RESPONSE
    source = HttpSource(url, token=settings.http_token)
    rows = [r for r in source.timeline(run, 1000) if r.key_name == f"step-{step}"]
    complete = next(r.offset for r in rows if r.kind == "complete")
    for offset in (complete - 1, complete):
        console.rule(f"oncelog status {run} {step} --as-of {offset}")
        query_cmd.status(run, str(step), as_of=str(offset), db=None, url=url, as_json=False)
    console.rule("oncelog duplicates")
    query_cmd.duplicates(limit=100, db=None, url=url, as_json=False)
    counts = Counter(n for _, _, n in ds.ledger.stats()["applied"])
    console.rule("downstream")
    console.print(f"external effects applied, by count per idempotency key: {dict(counts)}")


def main() -> None:
    """Run the whole demo; exit non-zero if anything, verify included, fails."""
    base = Settings()
    broker_was_running = base.bootstrap_servers or LocalBroker(base).status() is not None
    began = time.monotonic()
    bootstrap = resolve_bootstrap(base, start=True)
    try:
        _run(base, bootstrap)
    finally:
        if not broker_was_running:
            LocalBroker(base).stop()
            console.print("stopped the local broker the demo started")
    console.print(f"demo finished in {time.monotonic() - began:.0f} s")


def _run(base: Settings, bootstrap: str) -> None:
    """Topics, serve, downstream, fleet, answers, verify."""
    tmp = Path(tempfile.mkdtemp(prefix="oncelog-demo-"))
    settings = base.model_copy(update={
        "bootstrap_servers": bootstrap, "topic_prefix": f"demo-{uuid.uuid4().hex[:8]}",
        "partitions": 3, "db_path": tmp / "ledger.duckdb", "http_port": free_port(),
    })  # fmt: skip
    console.print(
        f"broker {bootstrap}; topics {settings.topic_prefix}.*; DuckDB {settings.db_path}"
    )
    create_topics(admin_client(settings, bootstrap), ledger_topics(settings))
    serve = _start_serve(settings, tmp / "serve.log")
    ds = downstream.start("honour")
    url = f"http://127.0.0.1:{settings.http_port}"
    try:
        report = asyncio.run(run_fleet(settings, ds.url, runs=20, workers=4))
        console.print(
            f"fleet: {report.steps_done} steps done; reclaimed {report.reclaimed}; reconciled "
            f"{report.reconciled}; replayed {report.replayed}; fenced {report.fenced}"
        )
        _wait_caught_up(HttpSource(url, token=settings.http_token), "run-20", 12)
        _show(settings, url, ds)
    finally:
        process.stop(serve)
        ds.stop()
    _verify(settings, tmp)


def _verify(settings: Settings, tmp: Path) -> None:
    console.rule("oncelog verify")
    assert settings.bootstrap_servers is not None
    kafka = settings.kafka_config(settings.bootstrap_servers)
    with Store(settings.db_path, read_only=True) as live:
        report = verify(settings, kafka, tmp / "scratch.duckdb", live)
    for line in report.differences:
        console.print(f"DIFF {line}")
    console.print(
        f"refolded {report.refolded} requests; {report.compared_snapshots} snapshots and "
        f"{report.compared_live} live executions compared"
    )
    if not report.ok:
        raise SystemExit(1)
    console.print("[bold green]verify OK[/bold green]")


if __name__ == "__main__":
    main()
