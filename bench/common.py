"""Pieces the benchmarks share: percentiles, fresh topic sets, ``oncelog serve`` as a child."""

from __future__ import annotations

import contextlib
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

from oncelog.projector import process
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

PARTITIONS = 6


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
    create_topics(admin_client(settings, bootstrap), ledger_topics(settings))
    return settings


@contextlib.contextmanager
def serving(settings: Settings) -> Iterator[subprocess.Popen[bytes]]:
    """``oncelog serve --no-http`` in a process of its own, as deployed; stopped afterwards."""
    serve = process.start_serve(settings, settings.db_path.with_suffix(".serve.log"), "--no-http")
    try:
        yield serve
    finally:
        process.stop(serve)
