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
