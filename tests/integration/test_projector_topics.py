"""``oncelog serve`` refuses sharded topics whose partition counts differ (README, topics).

A request, its snapshot and its dead letter share one partition number, so the
requests, executions and dead-letter topics must have the same count.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from oncelog.projector import process
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

pytestmark = pytest.mark.kafka


@pytest.mark.parametrize("odd", ["executions", "deadletter"])
def test_serve_refuses_topics_with_unequal_partition_counts(
    settings: Settings, tmp_path: Path, odd: str
) -> None:
    assert settings.bootstrap_servers is not None
    odd_name = getattr(settings, f"{odd}_topic")
    specs = [
        dataclasses.replace(s, partitions=settings.partitions + 1) if s.name == odd_name else s
        for s in ledger_topics(settings)
    ]
    create_topics(admin_client(settings, settings.bootstrap_servers), specs)
    log = tmp_path / "serve.log"
    serve = process.start_serve(settings, log, "--no-http")
    try:
        code = serve.wait(timeout=process.START_TIMEOUT_S)
    finally:
        process.stop(serve)
    text = log.read_text()
    assert code == 2, text[-2000:]  # the CLI's exit code for a LedgerError
    assert "partition counts differ, they must be equal" in text
    assert f"'{odd_name}': {settings.partitions + 1}" in text
