"""The approvals' settings: who may decide, the keys that sign, the tokens that open the
routes (docs/guides/approvals.md). A part of :class:`oncelog.settings.Settings`, which reads
them with its ``ONCELOG_`` prefix like every other setting."""

from __future__ import annotations

import base64
from typing import Final

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings

_ED25519_KEY_BYTES: Final = 32


def _check_key(text: str, what: str) -> None:
    """A key given as base64 of its raw 32 bytes (ValueError naming ``what`` otherwise)."""
    try:
        raw = base64.b64decode(text, validate=True)
    except ValueError:
        raise ValueError(f"{what} is not base64 of a raw 32-byte Ed25519 key") from None
    if len(raw) != _ED25519_KEY_BYTES:
        raise ValueError(f"{what} is {len(raw)} bytes: an Ed25519 key has 32")


class ApprovalSettings(BaseSettings):
    """Approvers' public keys, this process's signing keys and the approval routes' tokens."""

    approvers: dict[str, str] = Field(
        default_factory=dict,
        description="Who may decide approvals: a JSON object of approver name -> base64 of "
        "their raw 32-byte Ed25519 public key. A claim needing approval lists them on its "
        "intent, and then only a decision signed by one of them counts (docs/guides/"
        "approvals.md). Empty: intents are decided by name, unsigned (development only).",
    )
    approver_keys: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="The private keys this process signs decisions with: a JSON object of "
        "approver name -> base64 raw 32-byte Ed25519 private key (`oncelog approvals "
        "keygen`). `oncelog approvals approve|deny` signs as --approver; serve's approval "
        "routes as the token's approver.",
    )

    @field_validator("approvers")
    @classmethod
    def _public_keys(cls, value: dict[str, str]) -> dict[str, str]:
        for name, key in value.items():
            _check_key(key, f"approver {name!r}'s public key")
        return value

    @field_validator("approver_keys")
    @classmethod
    def _private_keys(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        for name, key in value.items():
            _check_key(key.get_secret_value(), f"approver {name!r}'s private key")
        return value

    def approver_list(self) -> list[tuple[str, bytes]]:
        """``approvers`` as a policy lists them: (name, raw public key), by name."""
        return [(name, base64.b64decode(key)) for name, key in sorted(self.approvers.items())]

    def approver_key(self, name: str) -> bytes | None:
        """The raw private key ``name`` signs with, if this process holds it."""
        key = self.approver_keys.get(name)
        return None if key is None else base64.b64decode(key.get_secret_value())

    http_approver_tokens: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="Bearer tokens of the approval routes (POST /v1/approvals/{operation_id}/"
        "approve and /deny, and the approvals page's forms): a JSON object of approver name "
        "-> token, each distinct from ONCELOG_HTTP_TOKEN and ONCELOG_HTTP_WRITE_TOKEN. The "
        "route signs as that approver with its ONCELOG_APPROVER_KEYS entry. Empty: the "
        "routes are off.",
    )
