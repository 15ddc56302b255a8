"""Each Python block of the README stands alone: a reader copies one block, not the page.

The doc-block runner executes a page's blocks in one namespace, where a block may lean on
names an earlier block defined; on the front page every block must import what it uses.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.docs.blocks import ROOT, Block, blocks

README_BLOCKS = [b for b in blocks(ROOT / "README.md") if b.lang == "python"]


def undefined_names(code: str) -> str:
    """ruff's F821 (undefined name) report of ``code`` alone; empty when it has none."""
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "F821",
         "--output-format", "concise", "--stdin-filename", "block.py", "-"],
        input=code, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return "" if done.returncode == 0 else done.stdout


def test_the_readme_has_python_blocks() -> None:
    assert len(README_BLOCKS) >= 3


@pytest.mark.parametrize("block", README_BLOCKS, ids=[b.where for b in README_BLOCKS])
def test_a_readme_block_imports_what_it_uses(block: Block) -> None:
    assert undefined_names(block.code) == ""


def test_a_block_that_leans_on_another_is_caught() -> None:
    assert "oncelog" in undefined_names("with oncelog.connect_sync() as ledger:\n    pass\n")
