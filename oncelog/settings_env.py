"""How the ``ONCELOG_*`` environment is judged: unknown names warned, bad values one error.

A misspelt variable (``ONCELOG_BOOTSTRAP_SERVER``) would otherwise be ignored without
a word, and the client would quietly use its default; so every ``ONCELOG_*`` name that
no setting reads gets an :class:`UnknownSettingWarning` naming it and the nearest known
name, once per process. A value a setting cannot take is one
:class:`~oncelog.errors.InvalidConfigurationError` naming the variable, which the CLI
prints as one line (``error [invalid_configuration] ONCELOG_HTTP_PORT: ...``).
"""

from __future__ import annotations

import difflib
import re
import threading
import warnings
from collections.abc import Iterable, Mapping
from typing import Final

from pydantic import ValidationError
from pydantic_settings import SettingsError

from oncelog.errors import InvalidConfigurationError

PREFIX: Final = "ONCELOG_"

OTHER_NAMES: Final = frozenset(
    {
        # The query API's URL for its clients (the TypeScript SDK, the CLI's read commands).
        "ONCELOG_URL",
        # The test suite's and the benchmarks' switches.
        "ONCELOG_REQUIRE_NODE",
        "ONCELOG_REQUIRE_BROWSER",
        "ONCELOG_REQUIRE_GO",
        "ONCELOG_THOROUGH",
        "ONCELOG_BENCH_TRACING",
        "ONCELOG_BENCH_STAMPS",
        "ONCELOG_VECTORS",
        "ONCELOG_PHOENIX",
        # The compiled core's switch back to its source (oncelog._compiled).
        "ONCELOG_INTERPRETED",
        # The Rust extension's own off switch (oncelog.native_core).
        "ONCELOG_NATIVE",
    }
)
"""``ONCELOG_*`` names read by something other than :class:`~oncelog.settings.Settings`."""

_TEST_PREFIX: Final = "ONCELOG_TEST_"
_warned: set[str] = set()
_warned_lock = threading.Lock()


class UnknownSettingWarning(UserWarning):
    """An ``ONCELOG_*`` environment variable that no setting reads (a typo, most often)."""


def unknown_names(environ: Mapping[str, str], known: Iterable[str]) -> dict[str, str | None]:
    """Each ``ONCELOG_*`` name of ``environ`` that is not ``known``, with the nearest known
    name (None when none is close)."""
    names = frozenset(known) | OTHER_NAMES
    unknown: dict[str, str | None] = {}
    for name in environ:
        upper = name.upper()
        if not upper.startswith(PREFIX) or upper in names or upper.startswith(_TEST_PREFIX):
            continue
        close = difflib.get_close_matches(upper, sorted(names), n=1, cutoff=0.6)
        unknown[name] = close[0] if close else None
    return unknown


def warn_unknown(environ: Mapping[str, str], known: Iterable[str]) -> None:
    """Warn once per process about each unknown ``ONCELOG_*`` name (:func:`unknown_names`)."""
    for name, nearest in unknown_names(environ, known).items():
        with _warned_lock:
            if name in _warned:
                continue
            _warned.add(name)
        hint = f"; did you mean {nearest}?" if nearest else ""
        warnings.warn(
            f"{name} is not an oncelog setting and is ignored{hint}",
            UnknownSettingWarning,
            stacklevel=3,
        )


_FIELD_IN_SOURCE = re.compile(r'field "([^"]+)"')


def invalid_configuration(
    exc: ValidationError | SettingsError, secret: frozenset[str]
) -> InvalidConfigurationError:
    """One error naming each variable whose value was refused and why, on one line.

    The values of the ``secret`` fields are never repeated.
    """
    if isinstance(exc, SettingsError):
        found = _FIELD_IN_SOURCE.search(str(exc))
        name = PREFIX + found.group(1).upper() if found else "an ONCELOG_* variable"
        return InvalidConfigurationError(f"{name}: not valid JSON ({exc.__cause__ or exc})")
    problems = []
    for error in exc.errors(include_url=False):
        if error["type"] == "default_factory_not_called":
            continue  # a default made from fields refused above: not a problem of its own
        field = str(error["loc"][0]) if error["loc"] else ""
        what = f"{PREFIX}{field.upper()}" if field else "the settings"
        got = "" if field in secret else f" (got {str(error.get('input'))[:80]!r})"
        problems.append(f"{what}: {error['msg']}{got}")
    return InvalidConfigurationError("; ".join(problems).replace("\n", " "))
