"""``oncelog archive run | verify | trim | prune``: the requests log in Parquet, the log's
retention behind it, and the DuckDB history's window (docs/guides/retention.md)."""

from __future__ import annotations

import json
import signal
import threading
import time
from dataclasses import asdict
from typing import Annotated, Any

import typer

from oncelog.archive.archiver import archive_partition, verify_partition
from oncelog.archive.location import ArchiveLocation
from oncelog.archive.prune import prune_store
from oncelog.archive.prune_duty import window_of
from oncelog.archive.retention import trim_partition
from oncelog.broker.local import resolve_bootstrap
from oncelog.errors import InvalidArgumentError
from oncelog.kafka.reader import partition_count, plain_consumer
from oncelog.projector.store import Store
from oncelog.settings import Settings
from oncelog.topics import admin_client

app = typer.Typer(
    no_args_is_help=True,
    help="Archive the requests log to Parquet files; trim the log behind the archive.",
)

PartitionOption = Annotated[
    list[int] | None,
    typer.Option("--partition", help="This partition only (repeat for several); default: all."),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine output: one JSON document.")]


def _partitions(settings: Settings, kafka: dict[str, Any], asked: list[int] | None) -> list[int]:
    if asked:
        return sorted(set(asked))
    consumer = plain_consumer(kafka)
    try:
        return list(range(partition_count(consumer, settings.requests_topic)))
    finally:
        consumer.close()


def _say(as_json: bool, lines: list[str], facts: list[dict[str, Any]]) -> None:
    typer.echo(json.dumps(facts, sort_keys=True) if as_json else "\n".join(lines))


@app.command()
def run(
    partition: PartitionOption = None,
    once: Annotated[
        bool, typer.Option("--once", help="Archive up to the log's end now, then exit.")
    ] = False,
    interval_s: Annotated[
        float, typer.Option("--interval", min=0.1, help="Seconds between passes.")
    ] = 5.0,
    as_json: JsonOption = False,
) -> None:
    """Write the requests log to ONCELOG_ARCHIVE_URL as Parquet, with a manifest.

    Files per partition and offset range, then each partition's manifest. Resumable and
    idempotent: a re-run after a crash writes nothing twice.

    Without ``--once`` it runs until stopped (SIGTERM, Ctrl-C): a file per
    ONCELOG_ARCHIVE_FILE_RECORDS requests, or a smaller one once its oldest request is
    ONCELOG_ARCHIVE_MAX_AGE_S old.
    """
    settings = Settings()
    location = ArchiveLocation.from_settings(settings)
    kafka = settings.kafka_config(resolve_bootstrap(settings))
    partitions = _partitions(settings, kafka, partition)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    while True:
        age_ms = int(settings.archive_max_age_s * 1000)
        flush = None if once else int(time.time() * 1000) - age_ms
        results = [
            archive_partition(
                location,
                kafka,
                settings.requests_topic,
                p,
                file_records=settings.archive_file_records,
                flush_before_ms=flush,
            )
            for p in partitions
        ]
        if once:
            lines = [
                f"archived {settings.requests_topic}[{r.partition}] to offset {r.end_offset}: "
                f"{r.written} files written, {r.adopted} taken over, {r.records} records"
                for r in results
            ]
            _say(as_json, lines, [asdict(r) for r in results])
            return
        if stop.wait(interval_s):
            return


@app.command()
def verify(partition: PartitionOption = None, as_json: JsonOption = False) -> None:
    """Check every archived file against its manifest.

    Present, its SHA-256, its records and offsets: a difference fails with code
    ``archive_corrupt`` and names the file.
    """
    settings = Settings()
    location = ArchiveLocation.from_settings(settings)
    kafka = settings.kafka_config(resolve_bootstrap(settings))
    facts: list[dict[str, Any]] = []
    for p in _partitions(settings, kafka, partition):
        manifest = verify_partition(location, settings.requests_topic, p)
        facts.append(
            {
                "partition": p,
                "files": len(manifest.files),
                "records": manifest.records,
                "start_offset": manifest.start_offset,
                "end_offset": manifest.end_offset,
            }
        )
    files, records = sum(f["files"] for f in facts), sum(f["records"] for f in facts)
    _say(as_json, [f"archive OK: {files} files, {records} records"], facts)


@app.command()
def trim(
    partition: PartitionOption = None,
    upto: Annotated[
        int | None,
        typer.Option(
            "--upto",
            min=0,
            help="Delete before this offset (one --partition); default: the archive's end.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Delete the requests log's records that the archive holds, once verified.

    The archived files up to there are verified first, then Kafka's delete_records moves
    the log's start. Refused with code ``retention_unsafe`` for any offset not archived;
    the compacted topics are never trimmed.
    """
    if upto is not None and len(partition or []) != 1:
        raise InvalidArgumentError("--upto takes exactly one --partition")
    settings = Settings()
    location = ArchiveLocation.from_settings(settings)
    bootstrap = resolve_bootstrap(settings)
    kafka = settings.kafka_config(bootstrap)
    admin = admin_client(settings, bootstrap)
    topic = settings.requests_topic
    done = [
        trim_partition(admin, location, kafka, topic, p, upto=upto)
        for p in _partitions(settings, kafka, partition)
    ]
    lines = [
        f"trimmed {topic}[{t.partition}]: the log begins at {t.after} (was {t.before}); "
        f"archived to {t.archived_end}"
        for t in done
    ]
    _say(as_json, lines, [asdict(t) for t in done])


@app.command()
def prune(as_json: JsonOption = False) -> None:
    """Move the DuckDB history's rows out of the window to Parquet beside the archive.

    The window is ONCELOG_HISTORY_MAX_AGE_S and ONCELOG_HISTORY_MAX_VERSIONS (unset:
    everything is kept). Only rows the archive covers move; the queries read them back.
    Run it while the projector is stopped: it opens ONCELOG_DB_PATH for writing.
    """
    settings = Settings()
    location = ArchiveLocation.from_settings(settings)
    store = Store(settings.db_path)
    try:
        done = prune_store(
            store.cursor(),
            location,
            settings.requests_topic,
            window_of(settings),
            int(time.time() * 1000),
        )
    finally:
        store.close()
    lines = [f"pruned {d.rows} rows of {d.table}[{d.partition}]" for d in done if d.rows]
    _say(as_json, lines or ["nothing to prune"], [asdict(d) for d in done])
