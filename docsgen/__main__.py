"""``python -m docsgen``: write the generated reference pages into ``docs/reference/``."""

from __future__ import annotations

from pathlib import Path

from docsgen.reference import write

DOCS = Path(__file__).resolve().parents[1] / "docs"

if __name__ == "__main__":
    for path in write(DOCS):
        print(f"wrote {path.relative_to(DOCS.parent)}")
