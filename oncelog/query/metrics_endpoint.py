"""``GET /metrics``: the serve process's Prometheus registry, in the text format.

The metrics themselves are the projector's (:mod:`oncelog.projector.metrics`);
this module only exposes a registry. The route sits behind the API's bearer
token like every path outside ``oncelog.query.guard.OPEN_PATHS``: a scraper sends it as
``Authorization: Bearer <token>`` (``authorization`` in a Prometheus scrape config).
"""

from __future__ import annotations

from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

METRICS_PATH = "/metrics"


def install_metrics(app: FastAPI, registry: CollectorRegistry) -> None:
    """Serve ``registry`` at ``GET /metrics`` (left out of the OpenAPI schema)."""

    @app.get(METRICS_PATH, include_in_schema=False)
    def metrics() -> Response:
        # A plain def: FastAPI runs it in its thread pool, off the event loop.
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
