"""Every Python block of the README runs, against a live ledger."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from oncelog.settings import Settings
from tests.integration.conftest import RunningProjector

pytestmark = pytest.mark.kafka

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_the_readme_has_python_blocks() -> None:
    assert BLOCKS


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block-{i}" for i in range(len(BLOCKS))])
def test_readme_block_runs(
    block: str,
    topics: Settings,
    projector: RunningProjector,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert topics.bootstrap_servers is not None
    monkeypatch.setenv("ONCELOG_BOOTSTRAP_SERVERS", topics.bootstrap_servers)
    monkeypatch.setenv("ONCELOG_TOPIC_PREFIX", topics.topic_prefix)
    monkeypatch.setenv("ONCELOG_PARTITIONS", str(topics.partitions))
    exec(compile(block, str(README), "exec"), {"__name__": "__readme__"})
    exec(compile(block, str(README), "exec"), {"__name__": "__readme__"})
    # The second run is the retry: the recorded result is replayed, nothing runs twice.
    assert "already charged" in capsys.readouterr().out
