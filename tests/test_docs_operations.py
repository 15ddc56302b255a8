"""Every Python block of docs/operations.md runs (offline: none needs a broker), but those
marked ``<!-- not-run: why -->`` (tests/docs/blocks.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.blocks import blocks

PAGE = Path(__file__).resolve().parent.parent / "docs" / "operations.md"
BLOCKS = [b.code for b in blocks(PAGE) if b.lang == "python" and b.not_run is None]


def test_the_page_has_python_blocks() -> None:
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block-{i}" for i in range(len(BLOCKS))])
def test_block_runs(block: str) -> None:
    # Its own process: a block may configure logging, which would outlive it here.
    done = subprocess.run(
        [sys.executable, "-c", block], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
