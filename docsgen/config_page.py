"""The configuration reference, generated from :class:`oncelog.settings.Settings`."""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from docsgen.text import md_cell
from oncelog.settings import Settings

INTRO = """\
# Configuration

oncelog reads its settings once, at the edge (the CLI, `oncelog.connect()`), from environment
variables with the `ONCELOG_` prefix, into a frozen `oncelog.Settings`; code that builds
`Settings(...)` itself passes the same names in lower case (`Settings(topic_prefix="app")`).
Dictionaries are given as JSON (`ONCELOG_KAFKA_EXTRA_CONFIG='{"linger.ms": 5}'`). Secrets are
`SecretStr`: they never appear in a repr, a log line or an answer.

This page is generated from `oncelog/settings.py` (`make docs-reference`).

| variable | type | default | what it does |
|---|---|---|---|
"""


def render() -> str:
    """The page: one row per field of ``Settings``, in declaration order."""
    rows = [_row(name, field) for name, field in Settings.model_fields.items()]
    return INTRO + "\n".join(rows) + "\n"


def _row(name: str, field: FieldInfo) -> str:
    env = f"`ONCELOG_{name.upper()}`"
    description = md_cell(field.description or "")
    return f"| {env} | {_type(field.annotation)} | {_default(field)} | {description} |"


def _type(annotation: Any) -> str:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if annotation is SecretStr or SecretStr in args:
        return "secret"
    if typing.get_origin(annotation) is dict:
        return "JSON object"
    if args and typing.get_origin(annotation) is not dict:
        return _type(args[0])
    return {str: "text", int: "integer", float: "number", bool: "boolean", Path: "path"}.get(
        annotation, str(annotation)
    )


def _default(field: FieldInfo) -> str:
    if field.default is PydanticUndefined and field.default_factory is None:
        return "required"
    value: Any = field.get_default(call_default_factory=True, validated_data={})
    if value is None:
        return "unset"
    if isinstance(value, Path) and value.is_relative_to(Path.home()):
        value = Path("~") / value.relative_to(Path.home())
    if value == {}:
        return "`{}`"
    return f"`{value}`"
