"""Signed receipts of completed executions (ledger spec, section 7).

A receipt is ``base64url(payload) + "." + base64url(HMAC-SHA256(key, payload))``
without padding, where ``payload`` is the canonical JSON of
``{"v": 1, "op", "ik", "rh", "ep", "exp"}``: operation id, idempotency key,
result hash, epoch and expiry (ms since the epoch). Everything in it is derived
from the completed state, expiry included (``completed_at_ms + ttl_ms``), so
re-presenting the same completed execution re-derives the same receipt.
:func:`verify_receipt` needs only the key: no ledger lookup. The key comes from
configuration (``Settings.receipt_key``), never from the log. Receipts are
computed at the edge, outside the fold, which is why reading the wall clock in
:func:`verify_receipt` is fine.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from oncelog.errors import ConfigError, InvalidArgumentError, ReceiptError
from oncelog.identity.canonical_json import canonical_json
from oncelog.settings import Settings

VERSION: Final = 1
MAX_TOKEN_CHARS: Final = 2_048
_B64URL: Final = re.compile(r"[A-Za-z0-9_-]+")
_FIELDS: Final = {"v": int, "op": str, "ik": str, "rh": str, "ep": int, "exp": int}


class MalformedReceiptError(ReceiptError):
    """The token is not a receipt at all (shape, base64, JSON or fields)."""

    reason: ClassVar[str] = "malformed"


class BadSignatureError(ReceiptError):
    """The MAC does not match: forged, altered, or signed with another key."""

    reason: ClassVar[str] = "bad_signature"


class ReceiptExpiredError(ReceiptError):
    """The receipt was genuine but its expiry has passed."""

    reason: ClassVar[str] = "expired"


class NotCompletedError(InvalidArgumentError):
    """Only a COMPLETED execution has a receipt."""

    code = "not_completed"
    http_status = 409


@dataclass(frozen=True, slots=True)
class ReceiptClaims:
    """What a valid receipt asserts."""

    operation_id: str
    idempotency_key: str
    result_hash: str
    epoch: int
    expires_at_ms: int


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    # Strict: the stdlib decoder silently skips characters outside the alphabet.
    if not _B64URL.fullmatch(text):
        raise MalformedReceiptError("receipt part is not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError) as exc:
        raise MalformedReceiptError("receipt part is not base64url") from exc


def _key_bytes(key: bytes | str) -> bytes:
    data = key.encode("utf-8") if isinstance(key, str) else key
    if not isinstance(data, bytes) or not data:
        raise InvalidArgumentError("the receipt key must be non-empty bytes or text")
    return data


def _mac(key: bytes, payload: bytes) -> bytes:
    return hmac.new(key, payload, hashlib.sha256).digest()


def receipt_key(settings: Settings) -> bytes:
    """The receipt key from configuration; a :class:`ConfigError` when it is not set."""
    if settings.receipt_key is None or not settings.receipt_key.get_secret_value():
        raise ConfigError("no receipt key configured (ONCELOG_RECEIPT_KEY)")
    return settings.receipt_key.get_secret_value().encode("utf-8")


def sign_receipt(claims: ReceiptClaims, key: bytes, *, now_ms: int) -> str:
    """Sign ``claims``; refuses (:class:`ReceiptExpiredError`) when already past expiry."""
    if now_ms >= claims.expires_at_ms:
        raise ReceiptExpiredError(
            f"a receipt of {claims.operation_id} expired at {claims.expires_at_ms}"
        )
    payload = canonical_json(
        {
            "v": VERSION,
            "op": claims.operation_id,
            "ik": claims.idempotency_key,
            "rh": claims.result_hash,
            "ep": claims.epoch,
            "exp": claims.expires_at_ms,
        }
    )
    return f"{_b64(payload)}.{_b64(_mac(_key_bytes(key), payload))}"


def _parse_claims(payload: bytes) -> ReceiptClaims:
    try:
        data: Any = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MalformedReceiptError("receipt payload is not JSON") from exc
    if not isinstance(data, dict) or set(data) != set(_FIELDS):
        raise MalformedReceiptError("receipt payload has the wrong fields")
    for name, kind in _FIELDS.items():
        if isinstance(data[name], bool) or not isinstance(data[name], kind):
            raise MalformedReceiptError(f"receipt field {name!r} is not a {kind.__name__}")
    if data["v"] != VERSION:
        raise MalformedReceiptError(f"unknown receipt version {data['v']}")
    return ReceiptClaims(data["op"], data["ik"], data["rh"], data["ep"], data["exp"])


def verify_receipt(token: str, key: bytes | str, *, now_ms: int | None = None) -> ReceiptClaims:
    """Check a receipt's signature and expiry with ``key`` alone; return its claims.

    Raises a :class:`ReceiptError` (code ``invalid_receipt``) whose ``reason``
    is ``malformed``, ``bad_signature`` (forged, altered or another key) or
    ``expired``. ``now_ms`` defaults to the wall clock.
    """
    secret = _key_bytes(key)
    if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS or token.count(".") != 1:
        raise MalformedReceiptError("a receipt is two base64url parts joined by '.'")
    payload_b64, mac_b64 = token.split(".")
    payload, mac = _unb64(payload_b64), _unb64(mac_b64)
    # The signature is checked before the payload is even parsed.
    if not hmac.compare_digest(mac, _mac(secret, payload)):
        raise BadSignatureError("receipt signature does not match")
    claims = _parse_claims(payload)
    now = time.time_ns() // 1_000_000 if now_ms is None else now_ms
    if now >= claims.expires_at_ms:
        raise ReceiptExpiredError(f"receipt expired at {claims.expires_at_ms}")
    return claims
