"""The code blocks of README.md and every page under docs/, and how each one is checked.

A fence's language decides: ``python`` runs, ``sh`` is checked command by command, ``yaml``,
``json`` and ``toml`` parse, a fence without a language (or ``text``) is output. A block whose
fence follows ``<!-- not-run: reason -->`` on the line before is exempt (CONTRIBUTING.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
OUTPUT_LANGUAGES = frozenset({"", "text", "console-output"})
# "js": docs/typescript-sdk.md's blocks, run against a live ledger by
# tests/integration/test_docs_pages.py.
CHECKED_LANGUAGES = frozenset({"python", "sh", "yaml", "json", "toml", "markdown", "js"})
# Pages whose Python blocks need a fixture of their own, run by their own tests: a live
# `serve` with its write API (tests/integration/test_docs_pages.py), an OpenTelemetry SDK
# set per process (tests/integration/tracing/test_docs.py), a live `serve` folding
# checkpoints (tests/integration/checkpointer/test_docs.py: docs/langgraph.md, and the README,
# whose LangGraph example reads its checkpoints back through `serve`).
RUN_ELSEWHERE = frozenset({"README.md", "docs/http-api.md", "docs/tracing.md", "docs/langgraph.md"})
ALIASES = {"bash": "sh", "shell": "sh", "py": "python", "yml": "yaml"}
NOT_RUN = re.compile(r"^\s*<!--\s*not-run:\s*(?P<reason>.*?)\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")
# A Python line that talks to a broker: connect()/connect_sync() outside a comment.
ON_KAFKA = re.compile(r"^[^#\n]*\bconnect(_sync)?\(", re.M)


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its code, and why it is not run (if so)."""

    page: Path
    line: int
    lang: str
    code: str
    not_run: str | None

    @property
    def where(self) -> str:
        """``README.md:61``: the page, relative to the repository, and the fence's line."""
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, in order (a longer fence may enclose shorter ones)."""
    lines = page.read_text("utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        lang = opening["info"].strip().split(" ")[0].strip("{}.").lower()
        lang = ALIASES.get(lang, lang)
        before = lines[i - 1] if i > 0 else ""
        marker = NOT_RUN.match(before)
        end = i + 1
        while end < len(lines) and lines[end].strip() != fence[0] * len(fence):
            end += 1
        code = "\n".join(line[indent:] for line in lines[i + 1 : end]) + "\n"
        found.append(Block(page, i + 1, lang, code, marker["reason"] if marker else None))
        i = end + 1
    return found


def all_blocks() -> list[Block]:
    """The blocks of every page."""
    return [b for page in PAGES for b in blocks(page)]


def python_pages() -> tuple[list[Path], list[Path]]:
    """Pages with Python blocks to run: (those that need no broker, those that need one)."""
    memory: list[Path] = []
    kafka: list[Path] = []
    for page in PAGES:
        if page.relative_to(ROOT).as_posix() in RUN_ELSEWHERE:
            continue
        code = [b.code for b in blocks(page) if b.lang == "python" and b.not_run is None]
        if code:
            (kafka if any(ON_KAFKA.search(c) for c in code) else memory).append(page)
    return memory, kafka


def run_page(page: Path) -> None:
    """Run the page's Python blocks in order, in one namespace; their asserts are the test."""
    namespace: dict[str, object] = {"__name__": "__doc_block__"}
    for block in blocks(page):
        if block.lang == "python" and block.not_run is None:
            exec(compile(block.code, block.where, "exec"), namespace)
