"""An approver's signature on a decision: what is signed, how it is signed and checked.

An intent whose policy lists approvers (name + Ed25519 public key, recorded on the log
with the intent) takes only a decision signed by one of them: the referee checks the
signature against the keys on the log, so a decision depends on the log alone, and the
tokens that can write requests (a worker's claim token, the HTTP write token) cannot make
one. What is signed binds the decision to exactly one intent and one yes or no:
:func:`decision_message`.

Keys travel as base64 of their raw 32 bytes (``ONCELOG_APPROVERS`` holds public keys,
``ONCELOG_APPROVER_KEYS`` private ones); :func:`new_private_key` makes one.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from typing import Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from oncelog.errors import InvalidArgumentError
from oncelog.identity.canonical_json import canonical_json

KEY_BYTES: Final = 32
_DOMAIN: Final = b"oncelog approval decision v1\n"


def decision_message(
    operation_id: str, request_hash: str, approve: bool, approver: str, reason: str
) -> bytes:
    """The bytes an approver signs: the operation, the intent's request hash, yes or no,
    the approver's name and a denial's reason, under a domain tag of its own."""
    fields = [operation_id, request_hash, "approve" if approve else "deny", approver, reason]
    return _DOMAIN + canonical_json(fields)


def key_bytes(text: str, what: str) -> bytes:
    """The raw 32 bytes of a key given as base64; a typed error naming ``what`` otherwise."""
    try:
        raw = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidArgumentError(f"{what} is not base64: give the key's raw 32 bytes") from exc
    if len(raw) != KEY_BYTES:
        raise InvalidArgumentError(f"{what} is {len(raw)} bytes: an Ed25519 key has 32")
    return raw


def public_key_of(private_key: bytes) -> bytes:
    """The raw public key of a raw 32-byte private key."""
    key = Ed25519PrivateKey.from_private_bytes(private_key)
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def new_private_key() -> str:
    """A new approver's private key, base64 (keep it secret; publish :func:`public_key_of`)."""
    from cryptography.hazmat.primitives.serialization import (  # noqa: PLC0415
        NoEncryption,
        PrivateFormat,
    )

    raw = Ed25519PrivateKey.generate().private_bytes(
        Encoding.Raw, PrivateFormat.Raw, NoEncryption()
    )
    return base64.b64encode(raw).decode()


def sign(private_key: bytes, message: bytes) -> bytes:
    """The 64-byte Ed25519 signature of ``message`` by a raw 32-byte private key."""
    return Ed25519PrivateKey.from_private_bytes(private_key).sign(message)


def signed_by(
    approvers: Iterable[tuple[str, bytes]], approver: str, message: bytes, signature: bytes | None
) -> bool:
    """Whether ``signature`` over ``message`` is by the key of the approver named
    ``approver`` among ``approvers`` (name, raw public key) (False for an unknown name, a
    missing or bad signature, or a malformed key)."""
    if signature is None:
        return False
    for name, public_key in approvers:
        if name != approver or len(public_key) != KEY_BYTES:
            continue
        try:
            Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
        except (InvalidSignature, ValueError):
            continue
        return True
    return False
