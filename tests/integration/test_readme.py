"""Every Python block of the README runs: against a live ledger, or in memory."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from oncelog.settings import Settings
from tests.integration.conftest import RunningProjector

README = Path(__file__).resolve().parents[2] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
# A block on the in-memory ledger needs no broker; every other one talks to Kafka.
IN_MEMORY = [b for b in BLOCKS if "InMemoryLedger" in b]
ON_KAFKA = [b for b in BLOCKS if b not in IN_MEMORY]


def test_the_readme_has_python_blocks_of_both_kinds() -> None:
    assert IN_MEMORY
    assert ON_KAFKA


def _run(block: str) -> None:
    exec(compile(block, str(README), "exec"), {"__name__": "__readme__"})


@pytest.mark.parametrize("block", IN_MEMORY, ids=[f"memory-{i}" for i in range(len(IN_MEMORY))])
def test_in_memory_readme_block_runs(block: str) -> None:
    _run(block)  # its own asserts are the test


@pytest.mark.parametrize("block", ON_KAFKA, ids=[f"block-{i}" for i in range(len(ON_KAFKA))])
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
    _run(block)
    _run(block)
    # The second run is the retry: the recorded result is replayed, nothing runs twice.
    assert "already charged" in capsys.readouterr().out
