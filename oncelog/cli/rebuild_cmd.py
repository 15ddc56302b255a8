"""``oncelog rebuild`` and ``oncelog verify``: the projection from the log alone."""

from __future__ import annotations

import json
import tempfile
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from oncelog.archive.archiver import archived_head
from oncelog.archive.location import ArchiveLocation
from oncelog.archive.prune import check_pruned, with_archived
from oncelog.broker.local import resolve_bootstrap
from oncelog.cli.progress import refold_progress, wanted
from oncelog.errors import (
    ConfigError,
    HistoryIncompleteError,
    StoreError,
    VerifyIncompleteError,
)
from oncelog.kafka.reader import topic_ends
from oncelog.projector.bulk_rebuild import Head
from oncelog.projector.checkpoint_verify import rebuild_checkpoints
from oncelog.projector.rebuild import (
    Report,
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
JsonOption = Annotated[
    bool, typer.Option("--json", help="Machine output: one JSON document, no progress bar.")
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
    as_json: JsonOption = False,
) -> None:
    """Build a DuckDB projection from the requests log or from the compacted snapshots.

    With ``--partition``, only those partitions: the shard of one projector of several.
    A refold shows a progress bar on a terminal (records/s, ETA), none when piped.
    """
    settings = _settings(db)
    if settings.db_path.exists():
        raise ConfigError(f"{settings.db_path} exists; rebuild writes a new file (remove it first)")
    kafka = settings.kafka_config(resolve_bootstrap(settings))
    with Store(settings.db_path, checkpoint_mb=settings.duckdb_checkpoint_mb) as store:
        if source is Source.executions:
            n = rebuild_from_executions(settings, kafka, store, partition)
            _say(
                as_json,
                f"restored {n} executions into {settings.db_path}",
                restored=n,
                db_path=str(settings.db_path),
            )
            return
        show = wanted(as_json)
        total = _log_size(kafka, settings.requests_topic, partition) if show else 0
        heads = archive_heads(settings, kafka, partition)
        with refold_progress("refolding", total, enabled=show) as progress:
            n = rebuild_from_requests(settings, kafka, store, progress, partition, heads=heads)
        checkpoints = rebuild_checkpoints(settings, kafka, store, partition)
    _say(
        as_json,
        f"refolded {n} requests{_and_checkpoints(checkpoints)} into {settings.db_path}",
        refolded=n,
        checkpoint_records=checkpoints,
        db_path=str(settings.db_path),
    )


def archive_heads(
    settings: Settings, kafka: dict[str, object], partitions: list[int] | None
) -> dict[int, Head] | None:
    """Each partition's archived records, read before its log's tail, when an archive is
    configured (``ONCELOG_ARCHIVE_URL``); None: the log alone, from offset 0."""
    if not settings.archive_url:
        return None
    location = ArchiveLocation.from_settings(settings)
    topic = settings.requests_topic
    chosen = partitions if partitions is not None else sorted(topic_ends(kafka, topic))
    return {p: archived_head(location, topic, p) for p in chosen}


def _and_checkpoints(records: int) -> str:
    """`` and N checkpoint records`` when a LangGraph saver wrote any (none: nothing)."""
    return f" and {records} checkpoint records" if records else ""


def _checkpoints_part(compared: int) -> str:
    return f"checkpoints: {compared} compared; " if compared else ""


def _say(as_json: bool, line: str, **facts: Any) -> None:
    """``line`` for a person, or ``facts`` as one JSON document."""
    typer.echo(json.dumps(facts, sort_keys=True) if as_json else line)


def _log_size(kafka: dict[str, object], topic: str, partitions: list[int] | None) -> int:
    ends = topic_ends(kafka, topic)
    return sum(end for p, end in ends.items() if partitions is None or p in partitions)


SnapshotsOnlyOption = Annotated[
    bool,
    typer.Option(
        "--snapshots-only", help="Compare with the snapshots only, not with a DuckDB file."
    ),
]


def verify_cmd(
    db: DbOption = None, as_json: JsonOption = False, snapshots_only: SnapshotsOnlyOption = False
) -> None:
    """Refold the log into a scratch DuckDB; compare with snapshots and the live file.

    A live file compares only its own partitions (one projector's shard). The refold
    shows a progress bar on a terminal, none when piped or with ``--json``. A file that
    was asked for (``--db``, or the configured one when it exists) and cannot be read
    fails with code ``verify_incomplete`` before anything is refolded.
    """
    settings = _settings(db)
    kafka = settings.kafka_config(resolve_bootstrap(settings))
    console = Console()
    live: Store | None = None
    note: str | None = "live: not compared (--snapshots-only)"
    if not snapshots_only:
        live, note = _open_live(settings.db_path, asked=db is not None)
    if note is not None and not as_json:
        console.print(note, highlight=False)
    show = wanted(as_json)
    shard = None if live is None else sorted(live.positions())
    total = _log_size(kafka, settings.requests_topic, shard) if show else 0
    try:
        with (
            tempfile.TemporaryDirectory() as tmp,
            refold_progress("verifying", total, enabled=show) as progress,
        ):
            if live is not None:
                _check_pruned(live)
            scratch = Path(tmp) / "scratch.duckdb"
            heads = archive_heads(settings, kafka, shard)
            report = verify(
                settings, kafka, scratch, live, progress, live_history=with_archived, heads=heads
            )
    finally:
        if live is not None:
            live.close()
    if as_json:
        _print_report_json(report, note)
    else:
        _print_report(report, console)
    if report.history_missing:
        raise HistoryIncompleteError(
            f"{settings.db_path} lacks {report.history_missing} requests and versions that "
            "the requests topic has: its timelines and audit answer without them. Start "
            f"`oncelog serve --db {settings.db_path}`: it refolds them from the requests "
            "topic before it folds on (or build a whole file: `oncelog rebuild --from "
            "requests --db NEW.duckdb`)"
        )
    if not report.ok:
        raise typer.Exit(1)


def _check_pruned(live: Store) -> None:
    """The live file's pruned rows, as written (``archive_corrupt`` otherwise)."""
    cursor = live.cursor()
    try:
        check_pruned(cursor)
    finally:
        cursor.close()


def _print_report(report: Report, console: Console) -> None:
    for line in report.differences:
        console.print(f"[red]DIFF[/red] {line}", highlight=False)
    live_part = "skipped" if report.compared_live is None else f"{report.compared_live} compared"
    summary = (
        f"refolded {report.refolded} requests; snapshots: {report.compared_snapshots} compared; "
        f"live: {live_part}; {_checkpoints_part(report.compared_checkpoints)}"
        f"differences: {len(report.differences)}"
    )
    console.print(summary, highlight=False)
    if report.ok:
        console.print("verify OK")


def _print_report_json(report: Report, live_note: str | None) -> None:
    facts = {
        "ok": report.ok,
        "refolded": report.refolded,
        "compared_snapshots": report.compared_snapshots,
        "compared_live": report.compared_live,
        "compared_checkpoints": report.compared_checkpoints,
        "history_missing": report.history_missing,
        "live_note": live_note,
        "differences": report.differences,
    }
    typer.echo(json.dumps(facts, sort_keys=True))


def _open_live(path: Path, *, asked: bool) -> tuple[Store | None, str | None]:
    """The live file, read-only, or None and why it is not compared (none exists where
    the settings point, and none was named).

    Raises:
        VerifyIncompleteError: the file named with ``--db`` is missing, or any existing
            file cannot be opened: a comparison that was asked for cannot be made.
    """
    if not path.exists():
        if asked:
            raise VerifyIncompleteError(
                f"no DuckDB file at {path} to compare with: name the projector's file "
                "with --db, or compare with the snapshots only (--snapshots-only)"
            )
        return None, f"live: no DuckDB file at {path}"
    try:
        return Store(path, read_only=True), None
    except StoreError as exc:
        # A running projector holds the file: DuckDB allows one writer process.
        raise VerifyIncompleteError(
            f"cannot open {path} to compare with ({exc.message}); a running `oncelog serve` "
            "holds it: stop it and verify again, or compare with the snapshots only "
            "(--snapshots-only); `oncelog export` copies the live tables while it runs"
        ) from exc
