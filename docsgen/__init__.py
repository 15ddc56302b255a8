"""The documentation site's generated pages, built from the code by an mkdocs hook.

``hooks.py`` is named in ``mkdocs.yml``; each page module turns one source of truth into
Markdown: the CLI (its typer app), the HTTP API (its OpenAPI schema), the configuration
(``oncelog.settings.Settings``) and the error codes (``oncelog/errors.py`` and its subclasses).
"""
