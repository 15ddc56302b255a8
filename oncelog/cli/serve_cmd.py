"""``oncelog serve``: run the projector and its read-only HTTP API."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from prometheus_client import CollectorRegistry, Counter

from oncelog.archive.prune import Pruned
from oncelog.archive.prune_duty import PruneDuty
from oncelog.broker.local import resolve_bootstrap
from oncelog.errors import LedgerError
from oncelog.gateway import open_write_api
from oncelog.gateway.approval_desk import OpenApprovalDesk, open_approval_desk
from oncelog.gateway.service import OpenWriteApi
from oncelog.projector.checkpoint_store import CheckpointStore
from oncelog.projector.checkpoints import CheckpointFolder, FoldProgress
from oncelog.projector.collection import FullCollections, full_collections_by_schedule
from oncelog.projector.service import Projector
from oncelog.projector.store import Store
from oncelog.query.owners import GroupOwners
from oncelog.query.routing import QueryRouter
from oncelog.query.server import HttpServer, advertised_url, require_safe_bind, start_http
from oncelog.settings import Settings

DbOption = Annotated[Path | None, typer.Option("--db", help="DuckDB file (ONCELOG_DB_PATH).")]
HttpOption = Annotated[
    int | None, typer.Option("--http-port", help="Query API port (ONCELOG_HTTP_PORT); 0: any.")
]
NoHttp = Annotated[bool, typer.Option("--no-http", help="Do not serve the query API.")]
RedactOption = Annotated[
    bool,
    typer.Option(
        "--redact-results",
        help="Leave result bodies out of API answers (ONCELOG_HTTP_REDACT_RESULTS).",
    ),
]


def serve_settings(db: Path | None, redact_results: bool = False) -> Settings:
    """The environment's settings with the command line's ``--db`` and ``--redact-results``."""
    settings = Settings()
    if db is not None:
        settings = settings.model_copy(update={"db_path": db})
    if redact_results:
        settings = settings.model_copy(update={"http_redact_results": True})
    return settings


def serve(
    db: DbOption = None,
    http_port: HttpOption = None,
    no_http: NoHttp = False,
    redact_results: RedactOption = False,
) -> None:
    """Fold the requests topic into DuckDB and serve the query API.

    Without ONCELOG_HTTP_TOKEN the API binds loopback only; another host is refused
    (``insecure_bind``) before the store, the projector or the API starts. With
    ONCELOG_HTTP_WRITE_TOKEN it also serves the write API (docs/http-api.md).
    """
    run_serve(serve_settings(db, redact_results), http_port=http_port, http=not no_http)


def run_serve(
    settings: Settings,
    *,
    http_port: int | None = None,
    http: bool = True,
    before_commit: Callable[[], None] | None = None,
    before_publish: Callable[[list[tuple[int, int]]], None] | None = None,
) -> None:
    """Run the projector (and its query API when ``http``) until SIGINT or SIGTERM.

    ``before_commit`` and ``before_publish`` are the projector's fault hooks, for drills
    that start this same service with them (``python -m drills.faults.projector_entry``);
    ``oncelog serve`` passes none.
    """
    if http:
        require_safe_bind(settings.http_host, settings.http_token)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    bootstrap = resolve_bootstrap(settings)
    # This process's metrics: the projector reports in it, GET /metrics reads it.
    registry = CollectorRegistry()
    with _open_store(settings, registry) as store:
        # The API binds first: the projector joins its group with the URL (and the
        # actual port, when asked for 0) that the other members forward queries to.
        port = settings.http_port if http_port is None else http_port
        writes = open_write_api(settings, bootstrap) if http else None
        desk = open_approval_desk(settings, bootstrap) if http else None
        progress = FoldProgress()
        api = (
            _start_api(store, settings, port, bootstrap, registry, (writes, desk), progress)
            if http
            else None
        )
        settings = _advertising(settings, api)
        projector = Projector(
            settings,
            bootstrap,
            store,
            before_commit=before_commit,
            before_publish=before_publish,
            on_rebalance=lambda line: typer.echo(line, err=True),
            metrics=registry,
            max_states=settings.projector_max_states,
        )
        try:
            projector.start()
        except BaseException:
            _stop_api(api, writes, desk)
            raise
        where = "" if api is None else f", query API on {settings.http_advertised_url}"
        typer.echo(f"serving {settings.requests_topic} into {settings.db_path}{where}", err=True)
        try:
            with _folding(settings, bootstrap, store, projector, progress, stop):
                _run(projector, stop)
        finally:
            _stop_api(api, writes, desk)
            projector.close()


def _open_store(settings: Settings, registry: CollectorRegistry) -> Store:
    """The projector's DuckDB file, with the settings' threads, checkpoints and memory, and
    the history's window kept after commits when one is configured."""
    return Store(
        settings.db_path,
        threads=settings.duckdb_threads,
        checkpoint_mb=settings.duckdb_checkpoint_mb,
        memory_limit_mb=settings.duckdb_memory_limit_mb,
        checkpoint_every_s=settings.duckdb_checkpoint_interval_s,
        after_commit=prune_duty(settings, registry),
    )


def prune_duty(settings: Settings, registry: CollectorRegistry) -> PruneDuty | None:
    """The history's window kept by ``serve`` (docs/guides/retention.md), counted in
    ``oncelog_history_pruned_rows``; a failed prune is said and tried again later."""
    pruned = Counter(
        "oncelog_history_pruned_rows",
        "Rows of the DuckDB history moved to Parquet beside the archive, by table.",
        ("table",),
        registry=registry,
    )

    def count(done: list[Pruned]) -> None:
        for part in done:
            pruned.labels(part.table).inc(part.rows)

    def say(exc: LedgerError) -> None:
        typer.echo(f"prune of the history failed, tried again later [{exc.code}]: {exc}", err=True)

    return PruneDuty.configured(settings, on_pruned=count, on_error=say)


@contextmanager
def _folding(
    settings: Settings,
    bootstrap: str,
    store: Store,
    projector: Projector,
    progress: FoldProgress,
    stop: threading.Event,
) -> Iterator[None]:
    """Fold the checkpoints of the projector's partitions (docs/langgraph.md) on a thread
    of their own while the block runs; a failure there stops the whole service
    (``stop``) and is raised on leaving."""
    progress.follow(projector.held_partitions)
    folder = CheckpointFolder(
        settings.checkpoints_topic,
        settings.kafka_config(bootstrap),
        CheckpointStore(store),
        projector.held_partitions,
        progress,
    )
    failed: list[BaseException] = []

    def fold() -> None:
        try:
            folder.run(stop)
        except BaseException as exc:
            failed.append(exc)
            stop.set()

    thread = threading.Thread(target=fold, name="oncelog-checkpoints", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=10)
        folder.close()
    if failed:
        raise failed[0]


def _stop_api(
    api: HttpServer | None, writes: OpenWriteApi | None, desk: OpenApprovalDesk | None
) -> None:
    """Stop the API, then the write API's and the approval routes' transports (no route
    sends on them any more)."""
    if api is not None:
        api.stop()
    for sender in (writes, desk):
        if sender is not None:
            sender.close()


def _run(projector: Projector, stop: threading.Event) -> None:
    """Fold until ``stop``; full cycle collections only when due (see projector.collection)."""
    with full_collections_by_schedule(FullCollections()) as collections:
        projector.run(stop, after_batch=lambda handled: collections.tick(idle=handled == 0))


def _advertising(settings: Settings, api: HttpServer | None) -> Settings:
    """The settings with the URL the group forwards queries to (none without an API)."""
    if api is None:
        return settings
    return settings.model_copy(update={"http_advertised_url": advertised_url(settings, api.port)})


def _start_api(
    store: Store,
    settings: Settings,
    port: int,
    bootstrap: str,
    registry: CollectorRegistry,
    senders: tuple[OpenWriteApi | None, OpenApprovalDesk | None],
    progress: FoldProgress,
) -> HttpServer:
    """The API, answering for every channel of the group (see oncelog.query.routing);
    its checkpoint reads wait on ``progress`` for the position a saver names, and its
    gathered answers for the partitions the asking instance's view gives it."""
    router = QueryRouter(
        GroupOwners(settings, bootstrap),
        settings.projector_id,
        token=settings.http_token,
        timeout_s=settings.http_forward_timeout_s,
        redact_results=settings.http_redact_results,
        held=progress,
    )
    return start_http(
        store,
        settings.http_host,
        port,
        token=settings.http_token,
        redact_results=settings.http_redact_results,
        router=router,
        metrics=registry,
        writes=None if senders[0] is None else senders[0].api,
        decisions=None if senders[1] is None else senders[1].desk,
        checkpoints=progress,
    )
