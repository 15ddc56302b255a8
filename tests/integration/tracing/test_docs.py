"""docs/tracing.md's in-memory Python block runs, in a process of its own (it sets the
global tracer provider, which a process sets once)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[3] / "docs" / "tracing.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_in_memory_block_runs() -> None:
    [block] = [b for b in BLOCKS if "InMemoryLedger" in b]
    out = subprocess.run(
        [sys.executable, "-c", block], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr[-2000:]


def test_every_python_block_compiles() -> None:
    assert len(BLOCKS) == 2
    for block in BLOCKS:
        compile(block, str(DOC), "exec")
