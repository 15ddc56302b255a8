"""A full disk under the projector's DuckDB file (a small tmpfs of the test's own).

The broker's log directory filled is ``python -m drills.faults disk`` (docs/reliability.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from drills.faults.disk_full import can_mount, projector_disk_full
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.skipif(not can_mount(), reason="mounting a small tmpfs needs root"),
]


def test_a_full_duckdb_volume_stops_the_projector_typed_and_it_resumes(
    settings: Settings, tmp_path: Path
) -> None:
    assert settings.bootstrap_servers is not None
    create_topics(admin_client(settings, settings.bootstrap_servers), ledger_topics(settings))
    report = projector_disk_full(settings, tmp_path)
    assert report.stopped, "serve went on writing to a full volume"
    assert "[disk_full]" in report.message
    assert str(tmp_path / "vol" / "live.duckdb") in report.message
    assert report.acknowledged > 0
    assert report.lost == 0
    assert report.untyped_errors == []
    assert report.log.undecided == 0
    assert report.log.divergent_decisions == report.log.divergent_snapshots == 0
    assert report.log.verify_differences == []
    assert report.history is not None  # the filler's calls, recorded and checked
    assert report.history.operations >= 2 * report.acknowledged
    assert report.history.linearizable
