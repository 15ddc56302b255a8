"""Every Python block of docs/frameworks.md runs: a crash in the window, then the rerun."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

from oncelog.integrations import UnguardedToolWarning
from oncelog.testing import InMemoryLedger

PAGE = Path(__file__).resolve().parents[2] / "docs" / "frameworks.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(), flags=re.S)


def test_the_page_shows_each_framework() -> None:
    assert len(BLOCKS) == 4
    for adapter in ("langchain", "openai_agents", "pydantic_ai", "mcp"):
        assert any(f"oncelog.integrations.{adapter} import" in block for block in BLOCKS)


@pytest.mark.parametrize("block", BLOCKS, ids=["langgraph", "openai_agents", "pydantic_ai", "mcp"])
def test_the_block_crashes_once_then_its_rerun_runs_guarded(
    block: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lapses: list[float] = []
    advance = InMemoryLedger.advance

    def counted(self: InMemoryLedger, seconds: float) -> None:
        lapses.append(seconds)
        advance(self, seconds)

    # Each example moves the clock only where its first run crashed.
    monkeypatch.setattr(InMemoryLedger, "advance", counted)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnguardedToolWarning)  # each example has its hook
        exec(compile(block, str(PAGE), "exec"), {"__name__": "__docs__"})  # its asserts test it
    assert lapses == [61]
