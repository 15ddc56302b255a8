"""The HTTP API's bearer check, shared by the API's middleware and the UI's guard."""

from __future__ import annotations

import hmac
from typing import Final

_BEARER: Final = "bearer "


def bearer_matches(header: str | None, expected: bytes) -> bool:
    """Does an ``Authorization`` header carry ``Bearer <expected>``? Constant-time compare."""
    if header is None or header[: len(_BEARER)].lower() != _BEARER:
        return False
    return hmac.compare_digest(header[len(_BEARER) :].strip().encode(), expected)
