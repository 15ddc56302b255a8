"""``oncelog serve`` keeps the DuckDB history's window itself: a real serve process, a real
broker, a local archive. Rows the archive covers leave the file while it folds, the
queries answer as before, and the metric counts them."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from oncelog.archive.archiver import archive_partition
from oncelog.archive.location import ArchiveLocation
from oncelog.net import free_port
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector import process
from oncelog.query.source import HttpSource
from oncelog.settings import Settings
from oncelog.waiting import poll_until
from tests.integration.conftest import FAST

pytestmark = pytest.mark.kafka

CHANNEL = "run-window"


def _pruned(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == "oncelog_history_pruned_rows_total"
    )


def _answers(source: HttpSource) -> dict[str, Any]:
    timeline = source.timeline(CHANNEL, 1000)
    out: dict[str, Any] = {"timeline": timeline}
    for row in timeline:
        out[f"status {row.key_name} {row.offset}"] = source.status(
            CHANNEL, row.key_name, row.offset
        )
        out[f"history {row.key_name}"] = source.history(row.operation_id, 1000)
    return out


def _cycles(settings: Settings, steps: range) -> None:
    with SyncLedgerClient(settings, timeouts=FAST) as client:
        for step in steps:
            claim = client.claim_execution(CHANNEL, step=step, tool_name="t", params={"s": step})
            client.heartbeat_execution(claim.execution, claim.claim_token)
            client.complete_execution(claim.execution, claim.claim_token, {"n": step})


def test_serve_prunes_what_the_archive_covers_and_answers_the_same(
    topics: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "archive"
    monkeypatch.setenv("ONCELOG_ARCHIVE_URL", str(archive))
    monkeypatch.setenv("ONCELOG_HISTORY_MAX_VERSIONS", "1")
    monkeypatch.setenv("ONCELOG_HISTORY_PRUNE_INTERVAL_S", "0.1")
    settings = topics.model_copy(
        update={"db_path": tmp_path / "live.duckdb", "http_port": free_port()}
    )
    url = f"http://127.0.0.1:{settings.http_port}"
    log = tmp_path / "serve.log"
    serve = process.start_serve(settings, log)
    try:
        process.wait_http(serve, f"{url}/v1/positions", log)
        _cycles(settings, range(1, 4))
        source = HttpSource(url)
        # Decisions come before DuckDB's commit: wait for the file to hold the three steps.
        committed = poll_until(
            time.monotonic() + 30, lambda: len(source.timeline(CHANNEL, 1000)) == 9
        )
        assert committed
        before = _answers(source)
        assert _pruned(url) == 0  # a window, but nothing archived yet: nothing moves
        location = ArchiveLocation.from_settings(
            settings.model_copy(update={"archive_url": str(archive)})
        )
        kafka = settings.kafka_config(str(settings.bootstrap_servers))
        for p in range(settings.partitions):
            archive_partition(location, kafka, settings.requests_topic, p, file_records=100)
        _cycles(settings, range(10, 11))  # commits: the next one prunes
        moved = poll_until(time.monotonic() + 30, lambda: _pruned(url))
        assert moved, f"serve pruned nothing:\n{log.read_text()[-2000:]}"
        assert poll_until(time.monotonic() + 30, lambda: len(source.timeline(CHANNEL, 1000)) == 12)
        after = _answers(source)
        assert {k: v for k, v in after.items() if "step-10" not in k and k != "timeline"} == {
            k: v for k, v in before.items() if k != "timeline"
        }
        assert after["timeline"][: len(before["timeline"])] == before["timeline"]
    finally:
        assert process.stop(serve) == 0
    con = duckdb.connect(str(settings.db_path), read_only=True)
    try:
        [(listed,)] = con.execute("SELECT sum(rows) FROM archived_rows").fetchall()
    finally:
        con.close()
    assert listed == moved
