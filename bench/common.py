"""Pieces the benchmarks share: percentiles, fresh topic sets, ``oncelog serve`` as a child."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from oncelog.broker.local import RunBroker, broker_for_run
from oncelog.projector import process
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

PARTITIONS = 6

# Topics this run created, deleted by bench_broker() on the way out: a broker that
# keeps every run's topics spends more of its idle CPU on them with each run.
_created: list[str] = []


def pct(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_settings(bootstrap: str, tmp: Path, name: str) -> Settings:
    """Settings on a fresh topic set ``bench-NAME-<random>`` with its DuckDB file in ``tmp``."""
    settings = Settings(
        bootstrap_servers=bootstrap, topic_prefix=f"bench-{name}-{uuid.uuid4().hex[:6]}",
        partitions=PARTITIONS, db_path=tmp / f"{name}.duckdb",
    )  # fmt: skip
    _created.extend(create_topics(admin_client(settings, bootstrap), ledger_topics(settings)))
    return settings


def created_here(names: list[str]) -> None:
    """Have bench_broker() delete these topics when the run ends."""
    _created.extend(names)


@contextlib.contextmanager
def bench_broker() -> Iterator[RunBroker]:
    """``broker_for_run`` that deletes the topics this run created before it lets go."""
    with broker_for_run(Settings()) as broker:
        try:
            yield broker
        finally:
            if _created:
                admin = admin_client(Settings(), broker.bootstrap)
                for future in admin.delete_topics(list(_created), operation_timeout=30).values():
                    with contextlib.suppress(Exception):  # best effort: the run's result stands
                        future.result(timeout=30)
                _created.clear()


#: Tracing on in a benchmark's clients and serve (``bench.peers --tracing`` sets it).
TRACING_ENV = "ONCELOG_BENCH_TRACING"


def tracing_wanted() -> bool:
    """True when the benchmark is asked to run with OpenTelemetry on (bench/traced.py)."""
    return os.environ.get(TRACING_ENV, "") not in ("", "0")


@contextlib.contextmanager
def serving(settings: Settings) -> Iterator[subprocess.Popen[bytes]]:
    """``oncelog serve --no-http`` in a process of its own, as deployed; stopped afterwards."""
    log = settings.db_path.with_suffix(".serve.log")
    if tracing_wanted():  # serve with the OpenTelemetry SDK's provider set (bench/traced.py)
        serve = process.spawn(
            ["-m", "bench.traced", "serve", "--no-http"], log, process.serve_env(settings)
        )
    else:
        serve = process.start_serve(settings, log, "--no-http")
    try:
        yield serve
    finally:
        process.stop(serve)


def on_broker(name: str, measure: Callable[[str, Path], dict[str, Any]]) -> dict[str, Any]:
    """``measure(bootstrap, scratch_dir)`` on the configured broker, else the local one
    (stopped afterwards only if started here), plus the load average before and after."""
    tmp = Path(tempfile.mkdtemp(prefix=f"oncelog-bench-{name}-"))
    load = os.getloadavg()[0]
    try:
        with bench_broker() as broker:
            figures = measure(broker.bootstrap, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    figures["load_avg_1m"] = [round(load, 2), round(os.getloadavg()[0], 2)]
    return figures
