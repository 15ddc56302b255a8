"""mkdocs hook: the docstrings' reST roles shown as code on the built pages.

The reference pages made from the code are committed files under ``docs/reference/``
(:mod:`docsgen.reference`, ``make docs-reference``), built like any other page.
"""

from __future__ import annotations

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import Files
from mkdocs.structure.pages import Page

from docsgen.text import html_without_roles


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """The docstrings' reST roles (``:class:`~x.Y```) shown as code, not as written."""
    return html_without_roles(html)
