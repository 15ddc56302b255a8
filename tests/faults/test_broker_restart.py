"""Stop and restart a broker of the test's own under load."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from drills.faults.broker_restart import broker_restart_drill

pytestmark = pytest.mark.kafka


def test_broker_restart_under_load(tmp_path: Path) -> None:
    if os.environ.get("ONCELOG_BOOTSTRAP_SERVERS"):
        pytest.skip("the drill stops its own local broker; an external one is configured")
    report = broker_restart_drill(tmp_path, outage_s=5.0, phase_s=3.0)
    assert report.calls_before > 0
    assert sum(report.errors_during.values()) > 0  # the outage was felt ...
    # ... as typed errors: a call whose request the broker took while the projector had
    # not reconnected yet times out as no_projector (a timeout too).
    assert set(report.errors_during) <= {"timeout", "no_projector", "kafka_error"}
    assert report.untyped_errors == []
    assert report.calls_after > 0  # the SDK resumed
    assert report.projector_survived
    assert report.acknowledged_lost == 0
    assert report.log.undecided == 0
    assert report.log.verify_differences == []
    # The load's calls, timeouts (unknown outcomes) included, form a linearizable history.
    assert report.history is not None
    assert report.history.operations >= report.acknowledged
    assert report.history.unknown > 0  # the outage left calls without an answer
    assert report.history.linearizable
