"""``oncelog serve``: run the projector (and, with the query issue, its HTTP API)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated

import typer

from oncelog.broker.local import resolve_bootstrap
from oncelog.projector.service import Projector
from oncelog.projector.store import Store
from oncelog.settings import Settings

DbOption = Annotated[Path | None, typer.Option("--db", help="DuckDB file (ONCELOG_DB_PATH).")]


def serve(db: DbOption = None) -> None:
    """Fold the requests topic into DuckDB until SIGINT/SIGTERM."""
    settings = Settings()
    if db is not None:
        settings = settings.model_copy(update={"db_path": db})
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    with Store(settings.db_path) as store:
        projector = Projector(settings, resolve_bootstrap(settings), store)
        projector.start()
        typer.echo(f"serving {settings.requests_topic} into {settings.db_path}", err=True)
        try:
            projector.run(stop)
        finally:
            projector.close()
