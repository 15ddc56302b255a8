"""Five SIGKILLs of the projector under load: nothing lost, nothing divergent, verify OK."""

from __future__ import annotations

from pathlib import Path

import pytest

from drills.faults.projector_kills import projector_kill_drill
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

pytestmark = pytest.mark.kafka


def test_five_projector_kills(settings: Settings, tmp_path: Path) -> None:
    assert settings.bootstrap_servers is not None
    create_topics(admin_client(settings, settings.bootstrap_servers), ledger_topics(settings))
    report = projector_kill_drill(settings, tmp_path, kills=5)
    assert report.kills == 5
    assert report.completed_calls > 0
    assert report.untyped_errors == []
    assert report.typed_errors == {}  # calls wait out the restarts: no timeout within 300 s
    assert report.log.requests >= 2 * report.completed_calls
    assert report.log.undecided == 0
    assert report.log.divergent_decisions == 0
    assert report.log.divergent_snapshots == 0
    assert report.log.verify_differences == []
    # Every call of the load was recorded, and the history is linearizable per operation.
    assert report.history is not None
    assert report.history.operations >= 2 * report.completed_calls
    assert report.history.linearizable
    assert report.ok
