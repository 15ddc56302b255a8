"""The network drill's short version: one fault per link, through Toxiproxy."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from drills.faults.net_schedule import short_schedule
from drills.faults.network import LINKS, network_drill

pytestmark = pytest.mark.kafka


def test_one_fault_per_link_loses_nothing(tmp_path: Path) -> None:
    if os.environ.get("ONCELOG_BOOTSTRAP_SERVERS"):
        pytest.skip("the drill starts its own broker behind its proxies")
    report = network_drill(tmp_path, short_schedule(LINKS), workers=2, report_line=lambda _: None)
    figures = report.figures()
    assert figures["faults"] == len(LINKS)
    assert figures["calls"] > 0
    assert figures["acknowledged"] > 0
    # The faults were felt: the probe or the load saw typed failures while they lasted.
    assert (
        sum(figures["typed_errors"].values()) + sum(sum(a.errors.values()) for a in report.applied)
        > 0
    )
    for name in ("lost", "undecided", "divergent", "hung_calls", "untyped_errors",
                 "double_grants", "verify_differences", "unrecovered"):  # fmt: skip
        assert figures[name] == 0, (name, report.findings())
    assert report.projector_survived
    # Every load call was recorded (the contended keys' reclaims and the faults' unknown
    # outcomes included), and the history is linearizable per operation.
    assert report.history is not None
    assert report.history.operations == figures["calls"]
    assert report.history.linearizable
