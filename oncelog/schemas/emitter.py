"""What the schema's code generators share: the source's lines and the names it uses.

:mod:`~oncelog.schemas.inline_reader` and :mod:`~oncelog.schemas.record_writer` each
generate Python from an Avro schema; both keep the lines written so far, the scope the
code runs in, and fresh names for the values they bind into it.
"""

from __future__ import annotations

from typing import Any


class Emitter:
    """The lines of generated code, the scope they run in and the schema's named types."""

    def __init__(self, named: dict[str, Any], scope: dict[str, Any]) -> None:
        self.named = named
        self.lines: list[str] = []
        self.scope = scope
        self._count = 0

    def fresh(self, stem: str) -> str:
        """A name not used before by this emitter."""
        self._count += 1
        return f"{stem}{self._count}"

    def bind(self, stem: str, value: Any) -> str:
        """A fresh name for ``value`` in the generated code's scope."""
        name = self.fresh(stem)
        self.scope[name] = value
        return name

    def resolved(self, t: Any) -> Any:
        """``t``, or the named type it refers to."""
        return self.named[t] if isinstance(t, str) and t in self.named else t
