"""The documentation site's reference pages made from the code (``make docs-reference``).

They are committed under ``docs/reference/`` (:mod:`docsgen.reference`). Each page module
turns one source of truth into Markdown: the CLI (its typer app), the HTTP API (its OpenAPI
schema), the configuration (``oncelog.settings.Settings``) and the error codes
(``oncelog/errors.py`` and its subclasses).
"""
