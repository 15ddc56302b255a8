"""A recorded failure's code: the first word of its text (``result_unrecordable: why``).

Pure. The projection keeps the code of each failure, not its text: the audit of doubles
reads it (a fenced ``result_unrecordable`` failure is evidence that a tool ran), and a
failure's text, which may quote anything the tool saw, stays on the log.
"""

from __future__ import annotations

import re
from typing import Final

RESULT_UNRECORDABLE: Final = "result_unrecordable"
"""The code of a failure recorded because a tool ran but its result could not be recorded."""

# ``code: message`` (a recorded LedgerError, ``ValueError: boom``) or ``[code] message``
# (the CLI's form): the code is a word of letters, digits and underscores.
_CODE: Final = re.compile(r"^\[?([A-Za-z_][A-Za-z0-9_]*)(?:[^A-Za-z0-9_]|$)")


def failure_code(error: str | None) -> str | None:
    """The code of a recorded failure text: its first word; None without one."""
    if error is None:
        return None
    found = _CODE.match(error)
    return found.group(1) if found else None
