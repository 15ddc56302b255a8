"""History bounded in DuckDB: the queries answer the same after the window moved, reading the
pruned rows from Parquet beside the archive (a real broker, a real DuckDB file, a local
archive directory)."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from oncelog.archive.archiver import archive_partition, load_manifest, save_manifest
from oncelog.archive.location import ArchiveLocation
from oncelog.archive.prune import Window, check_pruned, prune_store, with_archived
from oncelog.errors import ArchiveCorruptError
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.rebuild import verify
from oncelog.query import effects, queries
from oncelog.settings import Settings
from tests.integration.conftest import FAST, RunningProjector
from tests.integration.helpers import wait_for_projection

pytestmark = pytest.mark.kafka

HOUR_MS = 3_600_000


def _ledger(topics: Settings, projector: RunningProjector) -> None:
    """One step still claimed and three completed (pure and external), in one channel (one
    partition: the last completion's position covers them all)."""
    with SyncLedgerClient(topics, timeouts=FAST) as client:
        client.claim_execution("run-p", step=4, tool_name="t", params={})
        for step in (1, 2, 3):
            effect = "external" if step == 2 else "pure"
            claim = client.claim_execution(
                "run-p", step=step, tool_name="t", params={"s": step}, effect=effect
            )
            done = client.complete_execution(claim.execution, claim.claim_token, {"n": step})
    wait_for_projection(projector.projector, done.position)


def _answers(con: Any) -> dict[str, Any]:
    """Every question the window must not change: status as of each request's offset and
    time, each operation's history, the timeline, the side effects and the audit."""
    timeline = queries.channel_timeline(con, "run-p")
    out: dict[str, Any] = {"timeline": timeline, "duplicates": queries.suspected_duplicates(con)}
    for row in timeline:
        key = row.key_name
        moment = datetime.fromtimestamp(row.log_time_ms / 1000, tz=UTC)
        for as_of in (row.offset, max(0, row.offset - 1), moment):
            out[f"status {key} {as_of}"] = queries.step_status(
                con, "run-p", key_name=key, as_of=as_of
            )
        out[f"history {key}"] = queries.operation_history(con, row.operation_id)
    start, end = effects.bound("from", step=1), effects.bound("to", step=3)
    out["effects"] = effects.side_effects(con, "run-p", start, end)
    return out


def _count(con: Any, table: str) -> int:
    [(n,)] = con.execute(f"SELECT count(*) FROM {table}").fetchall()
    return int(n)


def test_the_queries_answer_the_same_after_pruning(
    topics: Settings, projector: RunningProjector, tmp_path: Path
) -> None:
    _ledger(topics, projector)
    projector.halt()  # the store stays open: the prune is its only writer now
    location = ArchiveLocation.from_settings(
        topics.model_copy(update={"archive_url": str(tmp_path / "archive")})
    )
    con = projector.store.cursor()
    kafka = topics.kafka_config(str(topics.bootstrap_servers))
    before = _answers(con)
    kept = {"history": _count(con, "history"), "requests": _count(con, "requests")}
    window = Window(max_age_ms=HOUR_MS, max_versions=1)
    later = int(time.time() * 1000) + 2 * HOUR_MS
    # Nothing archived yet: nothing may leave the file.
    assert all(
        p.rows == 0 for p in prune_store(con, location, topics.requests_topic, window, later)
    )
    partitions = [p for (p,) in con.execute('SELECT "partition" FROM positions').fetchall()]
    for p in partitions:
        archive_partition(location, kafka, topics.requests_topic, p, file_records=2)
    [(channel_partition,)] = con.execute("SELECT DISTINCT partition FROM requests").fetchall()
    whole = load_manifest(location, topics.requests_topic, channel_partition)
    assert len(whole.files) > 2

    # The archive ends after its first file: only the rows before that end may move.
    end = whole.files[0].end_offset
    save_manifest(location, replace(whole, files=whole.files[:1]))
    first = prune_store(con, location, topics.requests_topic, window, later)
    assert sum(p.rows for p in first if p.table == "requests") == end
    assert _count(con, "requests") == kept["requests"] - end
    assert _answers(con) == before

    save_manifest(location, whole)
    pruned = [*first, *prune_store(con, location, topics.requests_topic, window, later)]

    moved = {t: sum(p.rows for p in pruned if p.table == t) for t in kept}
    assert moved["requests"] == kept["requests"]  # every request is archived and old
    assert _count(con, "history") == 4  # the current versions stay, the rest moved
    assert moved["history"] == kept["history"] - 4
    assert _answers(con) == before


def test_verify_reads_the_pruned_rows_and_fails_on_a_corrupted_file(
    topics: Settings, projector: RunningProjector, tmp_path: Path
) -> None:
    _ledger(topics, projector)
    projector.halt()
    location = ArchiveLocation.from_settings(
        topics.model_copy(update={"archive_url": str(tmp_path / "archive")})
    )
    con = projector.store.cursor()
    kafka = topics.kafka_config(str(topics.bootstrap_servers))
    for (p,) in con.execute('SELECT "partition" FROM positions').fetchall():
        archive_partition(location, kafka, topics.requests_topic, p, file_records=2)
    later = int(time.time() * 1000) + 2 * HOUR_MS
    window = Window(max_age_ms=HOUR_MS, max_versions=1)
    assert sum(p.rows for p in prune_store(con, location, topics.requests_topic, window, later))

    store = projector.store
    assert check_pruned(con) == 2  # one file of requests, one of versions
    report = verify(topics, kafka, tmp_path / "a.duckdb", store, live_history=with_archived)
    assert report.history_missing == 0
    assert report.ok, report.differences
    # Read as the tables alone, the pruned history is missing: what verify said before.
    alone = verify(topics, kafka, tmp_path / "b.duckdb", store)
    assert alone.history_missing > 0

    [(path,)] = con.execute(
        "SELECT path FROM archived_rows WHERE table_name = 'history'"
    ).fetchall()
    data = Path(path).read_bytes()
    Path(path).write_bytes(data[:-9] + bytes(9))
    with pytest.raises(ArchiveCorruptError, match="differs from what was written") as caught:
        check_pruned(con)
    assert caught.value.code == "archive_corrupt"
    Path(path).unlink()
    with pytest.raises(ArchiveCorruptError, match="is missing"):
        check_pruned(con)
