"""Docstrings and help texts as Markdown table cells."""

from __future__ import annotations

import re

ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc):`~?([^`]+)`")


def md_cell(text: str) -> str:
    """``text`` on one line, its reST roles and double backticks as code, safe in a table.

    Outside code spans ``<`` and ``>`` become entities (``<prefix>`` is no HTML tag); inside
    them they stay, since a code span shows an entity as written.
    """
    text = ROLE.sub(lambda m: f"`{m[1]}`", text).replace("``", "`")
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    for i in range(0, len(parts), 2):  # the even parts are outside code spans
        parts[i] = parts[i].replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


HTML_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc):<code>(~?)([^<]+)</code>")


def html_without_roles(html: str) -> str:
    """Docstrings' reST roles as mkdocstrings renders them (``:class:<code>~a.B</code>``), as
    plain code: ``<code>B</code>`` (a ``~`` keeps the last name, as Sphinx shows it)."""
    return HTML_ROLE.sub(
        lambda m: f"<code>{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}</code>", html
    )
