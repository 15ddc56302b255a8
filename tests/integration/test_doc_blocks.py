"""Every code block of README.md and docs/**/*.md runs as a test (tests/docs/blocks.py).

Python blocks run page by page, in order, in one namespace: in memory, or against a live
ledger (a fresh topic set, a projector folding) when the page connects to a broker.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from oncelog.kafka.reader import topic_ends
from oncelog.query import queries
from oncelog.query.catch_up import wait_until_folded
from oncelog.query.source import LocalSource
from oncelog.settings import Settings
from tests.docs.blocks import ROOT, blocks, python_pages, run_page
from tests.integration.conftest import RunningProjector

IN_MEMORY, ON_KAFKA = python_pages()
README = ROOT / "README.md"


def _ids(pages: list[Path]) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in pages]


def test_the_readme_and_the_tutorial_run_on_kafka_and_the_guides_in_memory() -> None:
    assert README not in IN_MEMORY + ON_KAFKA  # on a live serve: checkpointer/test_docs.py
    assert ROOT / "docs" / "tutorial.md" in ON_KAFKA
    assert ROOT / "docs" / "guides" / "agent-frameworks.md" in IN_MEMORY


@pytest.mark.parametrize("page", IN_MEMORY, ids=_ids(IN_MEMORY))
def test_in_memory_page_runs(page: Path) -> None:
    run_page(page)  # the blocks' own asserts are the test


@pytest.mark.parametrize("page", ON_KAFKA, ids=_ids(ON_KAFKA))
def test_page_runs_on_kafka(
    page: Path, topics: Settings, projector: RunningProjector, monkeypatch: pytest.MonkeyPatch
) -> None:
    _point_at(topics, monkeypatch)
    run_page(page)


def test_the_readme_sdk_example_replays_on_a_rerun(
    topics: Settings,
    projector: RunningProjector,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Saved as app.py and run twice ("In your own app"): the second run replays."""
    (example,) = [b for b in blocks(README) if "already charged" in b.code]
    _point_at(topics, monkeypatch)
    for _ in range(2):
        exec(compile(example.code, example.where, "exec"), {"__name__": "__main__"})
    assert "already charged" in capsys.readouterr().out


def _point_at(topics: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    assert topics.bootstrap_servers is not None
    monkeypatch.setenv("ONCELOG_BOOTSTRAP_SERVERS", topics.bootstrap_servers)
    monkeypatch.setenv("ONCELOG_TOPIC_PREFIX", topics.topic_prefix)
    monkeypatch.setenv("ONCELOG_PARTITIONS", str(topics.partitions))


def test_the_tutorial_s_duplicates_line_is_what_the_audit_lists(
    topics: Settings, projector: RunningProjector, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``oncelog duplicates`` after the tutorial: the shipping step alone, reconciled found."""
    _point_at(topics, monkeypatch)
    tutorial = ROOT / "docs" / "tutorial.md"
    claim = "oncelog duplicates                        # 1 single: the shipping step, reconciled"
    assert claim in tutorial.read_text()
    run_page(tutorial)
    kafka = topics.kafka_config(topics.bootstrap_servers or "")
    cursor = projector.store.cursor()
    try:
        wait_until_folded(LocalSource(cursor), topic_ends(kafka, topics.requests_topic), 30)
        items = queries.suspected_duplicates(cursor, 100)
    finally:
        cursor.close()
    assert [(i.key_name, i.kind, i.settled, i.reconciled, i.verdict) for i in items] == [
        ("shipping", "unknown_outcome", "completed", "found", "single")
    ]
