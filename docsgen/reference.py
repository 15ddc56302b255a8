"""The generated reference pages, committed under ``docs/reference/``.

They are made from the code (the CLI's typer app, the HTTP API's OpenAPI schema, the settings,
the error classes) and committed, so that every link to them works in a clone and on a code
host, not only on the built site. ``make docs-reference`` (``python -m docsgen``) writes them;
``tests/docs/test_reference.py`` fails when one differs from what the code renders now.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Final

from docsgen import cli_page, config_page, errors_page, http_page

#: The command that writes the pages again (the staleness test's message names it).
REGENERATE: Final = "make docs-reference"

PAGES: Final[dict[str, Callable[[], str]]] = {
    "reference/cli.md": cli_page.render,
    "reference/http.md": http_page.render,
    "reference/configuration.md": config_page.render,
    "reference/errors.md": errors_page.render,
}


def write(docs: Path) -> list[Path]:
    """Render every page into ``docs`` (the site's docs folder); the paths written."""
    written = []
    for uri, render in PAGES.items():
        path = docs / uri
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render(), encoding="utf-8")
        written.append(path)
    return written


def stale(docs: Path) -> list[str]:
    """The pages under ``docs`` that differ from what the code renders now (or are missing)."""
    out = []
    for uri, render in PAGES.items():
        path = docs / uri
        if not path.is_file() or path.read_text(encoding="utf-8") != render():
            out.append(uri)
    return out
