"""docs/langgraph.md's and the README's Python blocks run, in order, against a live
``oncelog serve`` (its projector and the HTTP API the saver reads checkpoints through)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.blocks import ROOT, run_page
from tests.served import Served

pytestmark = pytest.mark.kafka

PAGES = [ROOT / "docs" / "langgraph.md", ROOT / "README.md"]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_the_page_runs_on_a_served_ledger(
    page: Path, served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = served.settings
    assert settings.bootstrap_servers is not None
    monkeypatch.setenv("ONCELOG_BOOTSTRAP_SERVERS", settings.bootstrap_servers)
    monkeypatch.setenv("ONCELOG_TOPIC_PREFIX", settings.topic_prefix)
    monkeypatch.setenv("ONCELOG_PARTITIONS", str(settings.partitions))
    monkeypatch.setenv("ONCELOG_HTTP_PORT", str(settings.http_port))
    run_page(page)  # the blocks' own asserts are the test
