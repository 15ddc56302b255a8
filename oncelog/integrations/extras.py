"""Optional extras: a missing framework is a typed error naming what to install."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from oncelog.errors import ConfigError


class MissingExtraError(ConfigError, ImportError):
    """An adapter's framework is not installed; the message says which extra to install.

    Also an :class:`ImportError`, so code that probes for optional adapters keeps working.
    """

    code = "missing_extra"


@contextlib.contextmanager
def requires_extra(extra: str) -> Iterator[None]:
    """Turn an ImportError of the framework's imports into :class:`MissingExtraError`.

    ``extra`` is the extra's name as pyproject declares it, PEP 685-normalised
    (``openai-agents``); the adapter's module is the same name with underscores.
    """
    try:
        yield
    except ImportError as exc:
        missing = exc.name or str(exc)
        module = extra.replace("-", "_")
        raise MissingExtraError(
            f"oncelog.integrations.{module} needs {missing}, which is not installed: "
            f"pip install 'oncelog[{extra}]'"
        ) from exc
