"""mkdocs hook: add the generated reference pages to the site before the nav is built."""

from __future__ import annotations

from collections.abc import Callable

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

from docsgen import cli_page, config_page, errors_page, http_page
from docsgen.text import html_without_roles

PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": cli_page.render,
    "reference/http.md": http_page.render,
    "reference/configuration.md": config_page.render,
    "reference/errors.md": errors_page.render,
}


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Each generated page, rendered from the code as it is at build time."""
    for uri, render in PAGES.items():
        files.append(File.generated(config, uri, content=render()))
    return files


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """The docstrings' reST roles (``:class:`~x.Y```) shown as code, not as written."""
    return html_without_roles(html)
