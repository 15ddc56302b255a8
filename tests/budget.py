"""How hard the property tests search: the full budget in ``make test``, a tenth otherwise.

``pytest -m "not kafka"`` is the quick loop (well under a minute); ``make test`` sets
``ONCELOG_THOROUGH=1`` and every fuzz test runs its full example count.
"""

from __future__ import annotations

import os
from typing import Final

THOROUGH: Final = os.environ.get("ONCELOG_THOROUGH") == "1"


def examples(full: int) -> int:
    """``full`` under ``make test``; in the quick loop a tenth of it, at least 50."""
    return full if THOROUGH else max(50, full // 10)
