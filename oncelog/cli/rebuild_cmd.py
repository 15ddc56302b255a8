"""``oncelog rebuild`` and ``oncelog verify``: the projection from the log alone."""

from __future__ import annotations

import tempfile
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from oncelog.broker.local import resolve_bootstrap
from oncelog.errors import ConfigError, StoreError
from oncelog.kafka.reader import topic_ends
from oncelog.projector.rebuild import (
    rebuild_from_executions,
    rebuild_from_requests,
    verify,
)
from oncelog.projector.store import Store
from oncelog.settings import Settings

DbOption = Annotated[Path | None, typer.Option("--db", help="DuckDB file (ONCELOG_DB_PATH).")]
PartitionOption = Annotated[
    list[int] | None,
    typer.Option(
        "--partition",
        help="Rebuild only this partition (repeat for a shard of several); default: all.",
    ),
]


class Source(StrEnum):
    """Where a rebuild reads from."""

    requests = "requests"
    executions = "executions"


def _settings(db: Path | None) -> Settings:
    settings = Settings()
    return settings.model_copy(update={"db_path": db}) if db is not None else settings


def rebuild(
    source: Annotated[Source, typer.Option("--from", help="requests (refold) or executions")],
    db: DbOption = None,
    partition: PartitionOption = None,
) -> None:
    """Build a DuckDB projection from the requests log or from the compacted snapshots.

    With ``--partition``, only those partitions: the shard of one projector of several.
    """
    settings = _settings(db)
    if settings.db_path.exists():
        raise ConfigError(f"{settings.db_path} exists; rebuild writes a new file (remove it first)")
    kafka = settings.kafka_config(resolve_bootstrap(settings))
    with Store(settings.db_path) as store:
        if source is Source.executions:
            n = rebuild_from_executions(settings, kafka, store, partition)
            typer.echo(f"restored {n} executions into {settings.db_path}")
            return
        total = _log_size(kafka, settings.requests_topic, partition)
        with Progress(TextColumn("refolding"), BarColumn(), MofNCompleteColumn()) as bar:
            task = bar.add_task("refold", total=total)
            n = rebuild_from_requests(
                settings, kafka, store, lambda _p, done: bar.advance(task, done), partition
            )
    typer.echo(f"refolded {n} requests into {settings.db_path}")


def _log_size(kafka: dict[str, object], topic: str, partitions: list[int] | None) -> int:
    ends = topic_ends(kafka, topic)
    return sum(end for p, end in ends.items() if partitions is None or p in partitions)


def verify_cmd(db: DbOption = None) -> None:
    """Refold the log into a scratch DuckDB; compare with snapshots and the live file.

    A live file compares only its own partitions (one projector's shard).
    """
    settings = _settings(db)
    kafka = settings.kafka_config(resolve_bootstrap(settings))
    console = Console()
    live = _open_live(settings.db_path, console)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            report = verify(settings, kafka, Path(tmp) / "scratch.duckdb", live)
    finally:
        if live is not None:
            live.close()
    for line in report.differences:
        console.print(f"[red]DIFF[/red] {line}", highlight=False)
    live_part = "skipped" if report.compared_live is None else f"{report.compared_live} compared"
    summary = (
        f"refolded {report.refolded} requests; snapshots: {report.compared_snapshots} compared; "
        f"live: {live_part}; differences: {len(report.differences)}"
    )
    console.print(summary, highlight=False)
    if not report.ok:
        raise typer.Exit(1)
    console.print("verify OK")


def _open_live(path: Path, console: Console) -> Store | None:
    if not path.exists():
        console.print(f"live: no DuckDB file at {path}", highlight=False)
        return None
    try:
        return Store(path, read_only=True)
    except StoreError as exc:
        # A running projector holds the file: DuckDB allows one writer process.
        console.print(f"live: cannot open {path} ({exc.message})", highlight=False)
        return None
