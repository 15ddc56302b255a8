"""The HTTP API's bearer check, shared by the API's middleware and the UI's guard."""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Final

from pydantic import SecretStr

_BEARER: Final = "bearer "


def bearer_matches(header: str | None, expected: bytes) -> bool:
    """Does an ``Authorization`` header carry ``Bearer <expected>``? Constant-time compare."""
    if header is None or header[: len(_BEARER)].lower() != _BEARER:
        return False
    return hmac.compare_digest(header[len(_BEARER) :].strip().encode(), expected)


def whose_token(tokens: Mapping[str, SecretStr], presented: str | None) -> str | None:
    """The name whose token ``presented`` is, among ``tokens`` (each compared in constant
    time, all of them whatever matches); None for none."""
    if presented is None:
        return None
    found = None
    for name, token in tokens.items():
        if hmac.compare_digest(presented.encode(), token.get_secret_value().encode()):
            found = name
    return found
