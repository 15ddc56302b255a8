"""``GET /metrics``: the serve process's Prometheus registry, in the text format.

The projector's metrics are :mod:`oncelog.projector.metrics`; this module exposes the
registry and adds the one metric read from the projection at scrape time: the audit's
operations by verdict (``oncelog_audit_operations``), which a fold batch cannot count
(a verdict changes as the attempt that took over ends). The route sits behind the
API's bearer token like every path outside ``oncelog.query.guard.OPEN_PATHS``: a scraper
sends it as ``Authorization: Bearer <token>`` (``authorization`` in a Prometheus scrape config).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Final

import duckdb
from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from oncelog.errors import StoreError
from oncelog.query.approvals import pending_count
from oncelog.query.queries import audit_verdict_counts
from oncelog.query.ttl_cache import TtlCache
from oncelog.query.verdicts import VERDICTS

METRICS_PATH = "/metrics"
AUDIT_METRIC: Final = "oncelog_audit_operations"
_AUDIT_HELP: Final = (
    "Operations in the audit of doubles, by verdict: double (two effects proven), possible "
    "(may have run twice), unsettled (the attempt that took over has not ended), single "
    "(one effect, reconciled). Alert on double and possible."
)

PENDING_METRIC: Final = "oncelog_approvals_pending"
_PENDING_HELP: Final = "Intents awaiting a person's approve or deny (GET /v1/approvals lists them)."


MAX_AGE_S: Final = 30.0
"""How long a count is reused: the audit scans the requests table, so not every scrape."""


class AuditVerdicts(Collector):
    """``oncelog_audit_operations{verdict}``, counted from this instance's DuckDB file.

    A count is reused for ``max_age_s`` (by ``clock``, monotonic seconds) so that
    frequent scrapes cost one audit query per interval.
    """

    def __init__(
        self,
        cursor_factory: Callable[[], duckdb.DuckDBPyConnection],
        max_age_s: float = MAX_AGE_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._cursor_factory = cursor_factory
        self._cache = TtlCache(self._count, max_age_s, clock)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """One sample per verdict; none when the projection cannot be read just now."""
        counts = self._counts()
        if counts is None:
            return  # a scrape never fails for it: the series is absent once
        family = GaugeMetricFamily(AUDIT_METRIC, _AUDIT_HELP, labels=["verdict"])
        for verdict in VERDICTS:
            family.add_metric([verdict], counts.get(verdict, 0))
        yield family

    def _counts(self) -> dict[str, int] | None:
        try:
            return self._cache.get()
        except StoreError:
            return None

    def _count(self, _last: dict[str, int] | None) -> dict[str, int]:
        with contextlib.closing(self._cursor_factory()) as cursor:
            return audit_verdict_counts(cursor)

    def describe(self) -> list[GaugeMetricFamily]:
        """Registered without a scrape (no database read at registration)."""
        return [GaugeMetricFamily(AUDIT_METRIC, _AUDIT_HELP, labels=["verdict"])]


class PendingApprovals(Collector):
    """``oncelog_approvals_pending``, counted from this instance's DuckDB file at scrape."""

    def __init__(self, cursor_factory: Callable[[], duckdb.DuckDBPyConnection]) -> None:
        self._cursor_factory = cursor_factory

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """One sample; none when the projection cannot be read just now."""
        try:
            with contextlib.closing(self._cursor_factory()) as cursor:
                count = pending_count(cursor)
        except StoreError:
            return
        yield GaugeMetricFamily(PENDING_METRIC, _PENDING_HELP, value=count)

    def describe(self) -> list[GaugeMetricFamily]:
        """Registered without a scrape (no database read at registration)."""
        return [GaugeMetricFamily(PENDING_METRIC, _PENDING_HELP)]


DUCKDB_MEMORY_METRIC: Final = "oncelog_duckdb_memory_bytes"
_DUCKDB_HELP: Final = (
    "Memory DuckDB holds for this instance's file (duckdb_memory()), by tag: the buffer pool "
    "(table blocks, indexes, rows not yet checkpointed). ONCELOG_DUCKDB_MEMORY_LIMIT_MB bounds it."
)


class DuckdbMemory(Collector):
    """``oncelog_duckdb_memory_bytes{tag}``, from ``duckdb_memory()`` at scrape."""

    def __init__(self, cursor_factory: Callable[[], duckdb.DuckDBPyConnection]) -> None:
        self._cursor_factory = cursor_factory

    def collect(self) -> Iterator[GaugeMetricFamily]:
        """One sample per tag that holds memory; none when DuckDB cannot be asked now."""
        try:
            with contextlib.closing(self._cursor_factory()) as cursor:
                rows = cursor.execute(
                    "SELECT tag, memory_usage_bytes FROM duckdb_memory() "
                    "WHERE memory_usage_bytes > 0"
                ).fetchall()
        except (StoreError, duckdb.Error):
            return
        family = GaugeMetricFamily(DUCKDB_MEMORY_METRIC, _DUCKDB_HELP, labels=["tag"])
        for tag, used in rows:
            family.add_metric([str(tag).lower()], float(used))
        yield family

    def describe(self) -> list[GaugeMetricFamily]:
        """Registered without a scrape."""
        return [GaugeMetricFamily(DUCKDB_MEMORY_METRIC, _DUCKDB_HELP, labels=["tag"])]


def install_metrics(
    app: FastAPI, registry: CollectorRegistry, audit_max_age_s: float = MAX_AGE_S
) -> None:
    """Serve ``registry`` at ``GET /metrics`` (left out of the OpenAPI schema), with the
    audit's verdicts read through the app's ``cursor_factory``."""
    cursor_factory = getattr(app.state, "cursor_factory", None)
    if cursor_factory is not None:
        collectors = (
            AuditVerdicts(cursor_factory, audit_max_age_s),
            PendingApprovals(cursor_factory),
            DuckdbMemory(cursor_factory),
        )
        for collector in collectors:
            with contextlib.suppress(ValueError):  # registered by an earlier app on this registry
                registry.register(collector)

    @app.get(METRICS_PATH, include_in_schema=False)
    def metrics() -> Response:
        # A plain def: FastAPI runs it in its thread pool, off the event loop.
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
