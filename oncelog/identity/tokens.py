"""Claim tokens and their fingerprints (docs/spec.md §8, the trust boundary).

A claim token is a capability: whoever shows it may heartbeat, complete, fail
or release that attempt. Only the requests topic carries tokens. Every surface
that others read (the state, snapshots, decisions, DuckDB, the HTTP API, the
CLI, logs) carries :func:`token_fingerprint` instead: a prefix of SHA-256 of the
token, enough to correlate attempts in an audit and useless for forging, since
the fold only ever accepts a request whose *token* hashes to the fingerprint.
"""

from __future__ import annotations

import functools
import hashlib
from typing import Final

TOKEN_FP_HEX: Final = 32
"""Hex digits of a fingerprint: 128 bits, as many as a token has."""

NO_TOKEN_FP: Final = ""
"""The fingerprint of a request that carries no token (cancel, sweep, get)."""


def token_fingerprint(token: str | None) -> str:
    """The readable stand-in of ``token``: the first 32 hex digits of its SHA-256."""
    if token is None:
        return NO_TOKEN_FP
    return fingerprint_of_token(token)


@functools.lru_cache(maxsize=4096)
def fingerprint_of_token(token: str) -> str:
    """:func:`token_fingerprint` of a present token, memoized.

    An attempt's claim, heartbeats and completion repeat its token, and the
    fold fingerprints every request; the memo is sized to the attempts in flight.
    """
    return hashlib.sha256(token.encode()).hexdigest()[:TOKEN_FP_HEX]
