"""``oncelog gateway``: the HTTP write API in worker processes of its own, behind one port."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from oncelog.broker.local import resolve_bootstrap
from oncelog.gateway.workers import run_gateway
from oncelog.settings import Settings

DEFAULT_PORT = 8766


def gateway(
    host: Annotated[
        str | None, typer.Option("--host", help="Where to bind (default ONCELOG_HTTP_HOST).")
    ] = None,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="0: any.")] = DEFAULT_PORT,
    workers: Annotated[
        int | None,
        typer.Option("--workers", min=1, help="Worker processes (default: one per CPU)."),
    ] = None,
    keys: Annotated[
        Path | None,
        typer.Option(
            "--keys",
            help="The idempotency keys' SQLite file, shared by gateways started apart on "
            "one port (default: this gateway's own).",
        ),
    ] = None,
) -> None:
    """Serve the HTTP write API (claims and completions, docs/http-api.md) from worker
    processes of its own, each with one Kafka producer and one reply listener.

    Needs ONCELOG_HTTP_WRITE_TOKEN; the projector (``oncelog serve``) folds what the
    workers send. The workers share the port (SO_REUSEPORT) and the memory of
    Idempotency-Keys; SIGINT or SIGTERM stops them.
    """
    settings = Settings()
    count = workers or os.cpu_count() or 1
    where = settings.http_host if host is None else host

    def ready(bound: int) -> None:
        typer.echo(f"gateway on http://{where}:{bound}, {count} workers", err=True)

    run_gateway(
        settings,
        resolve_bootstrap(settings),
        host=where,
        port=port,
        workers=count,
        keys=keys,
        on_ready=ready,
    )
