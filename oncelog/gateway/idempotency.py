"""The ``Idempotency-Key`` header of the write API (IETF httpapi-idempotency-key-header).

A key becomes the request id of the request a POST makes, so a retried POST is the
same request to the fold, which never lets one request id take effect twice. A claim
is a retry only with the same token too: :class:`ClaimTokens` derives a claim's token
from its key (an HMAC), so the retry carries the token of the first POST and gets its
grant back, without the server keeping any token.

What the fold cannot tell, the draft's two answers, this process remembers
(:class:`KeyMemory`): a key reused with another route or payload is refused (422,
``idempotency_key_reused``), and so is a key whose first request still waits for its
decision (409, ``request_in_flight``). The memory is bounded, in count and in age,
and is this process's own: behind several ``serve`` processes, a key reused with
another payload elsewhere is judged by the fold as a new request (a conflict, say).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from oncelog.errors import IdempotencyKeyReusedError, RequestInFlightError
from oncelog.identity import validation
from oncelog.identity.canonical_json import canonical_json

KEPT: Final = 100_000
"""Keys remembered at most (about 200 bytes each)."""
KEPT_FOR_S: Final = 24 * 3600.0
"""How long a key is remembered: longer than any client retries a POST."""


def parse_key(header: str | None) -> str | None:
    """The key of an ``Idempotency-Key`` header: an sf-string (quoted) as the draft has it,
    or a bare token; checked as a request id is (non-empty, at most 256 bytes, no
    control characters). None without the header."""
    if header is None:
        return None
    value = header.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    return validation.validate_unique_id("Idempotency-Key", value)


def fingerprint(route: str, payload: Any) -> str:
    """What a key was first used for: the route and the JSON payload, hashed."""
    return hashlib.sha256(canonical_json({"route": route, "payload": payload})).hexdigest()


@dataclass(slots=True)
class _Use:
    fingerprint: str
    in_flight: bool
    at: float


@dataclass
class KeyMemory:
    """The keys this process has seen: the payload each first came with, and whether its
    request still waits for its decision (at most ``kept`` keys, each ``kept_for_s``)."""

    kept: int = KEPT
    kept_for_s: float = KEPT_FOR_S
    clock: Callable[[], float] = field(default=time.monotonic, kw_only=True)
    _uses: OrderedDict[str, _Use] = field(default_factory=OrderedDict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __len__(self) -> int:
        return len(self._uses)

    @contextmanager
    def hold(self, key: str | None, print_: str) -> Iterator[None]:
        """Run the request of ``key`` (with payload fingerprint ``print_``), refusing a
        reuse with another payload and a retry while the first is still in flight."""
        if key is None:
            yield
            return
        use = self._begin(key, print_)
        try:
            yield
        finally:
            with self._lock:
                use.in_flight = False

    def _begin(self, key: str, print_: str) -> _Use:
        now = self.clock()
        with self._lock:
            self._forget_old(now)
            use = self._uses.get(key)
            if use is None:
                use = self._uses[key] = _Use(print_, True, now)
                return use
            if use.fingerprint != print_:
                raise IdempotencyKeyReusedError(
                    f"Idempotency-Key {key!r} was first used with another route or payload: "
                    "use a fresh key for a new request"
                )
            if use.in_flight:
                raise RequestInFlightError(
                    f"the request with Idempotency-Key {key!r} still waits for its decision: "
                    "retry after it is answered"
                )
            use.in_flight = True
            return use

    def _forget_old(self, now: float) -> None:
        uses = self._uses
        # Oldest first: a key is forgotten when too old, or to make room for a new one.
        while uses:
            key, oldest = next(iter(uses.items()))
            if len(uses) < self.kept and now - oldest.at < self.kept_for_s:
                return
            del uses[key]


class ClaimTokens:
    """The claim token of a claim sent with an ``Idempotency-Key``: HMAC-SHA256 of the
    key and the operation's names, 128 bits in hex like a fresh token, unguessable
    without the key. ``key`` None: a random one of this process's own."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = os.urandom(32) if key is None else key

    def token(
        self, request_id: str, channel_id: str, key_name: str | None, step: int | None
    ) -> str:
        """The token of the claim ``request_id`` makes for that operation."""
        message = json.dumps([request_id, channel_id, key_name, step]).encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()[:32]
