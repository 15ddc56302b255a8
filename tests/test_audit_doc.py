"""docs/audit.md stays true: its Python blocks run as written (in memory, no broker)."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "audit.md"


def test_the_audit_pages_python_blocks_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    assert blocks, "the page has a runnable example"
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {"__name__": "audit_doc"})
