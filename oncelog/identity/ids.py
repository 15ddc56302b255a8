"""Identity: request hashes, operation ids and idempotency keys (docs/spec.md §2).

Everything here is deterministic and pure, so that every SDK in every language
derives the same identity from the same input (see ``tests/vectors/identity.json``).
"""

from __future__ import annotations

import functools
import hashlib
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final

from oncelog.errors import InvalidArgumentError
from oncelog.identity.canonical_json import canonical_json, json_string, sha256_hex
from oncelog.identity.validation import (
    is_ascii_number,
    validate_dedup_fields,
    validate_id,
    validate_int,
)

IDENTITY_VERSION: Final = 2
"""The identity rule in force: v2 hashes RFC 8785 (JCS) canonical JSON.

v1 (oncelog 0.1 before JCS) hashed Python-flavoured JSON (``1.0``, ``1e-07``, exact big
integers) in the namespace of ``urn:oncelog:identity:v1``. Each version has its own
namespace, so an id of one rule never equals an id of another: ids minted under v1 are
not recognised by v2 (a clean break, see the README's "Identity" section).
"""

# Derived once as uuid5(NAMESPACE_URL, "urn:oncelog:identity:v2") and frozen as a
# literal: changing it would change every operation id ever minted.
ONCELOG_NAMESPACE: Final = uuid.UUID("d86ed2a2-8ca6-5274-b410-ad593ab0bb67")


# The functions below that check their arguments take them as ``object``: this module is
# compiled (oncelog._compiled), and a compiled ``str`` or ``int`` parameter would refuse a
# wrong type with a bare TypeError (or take ``True`` as 1) before the check could answer
# ``invalid_argument``.


def step_key_name(step: object) -> str:
    """The key name the SDK uses when the caller gives a step number (checked here: any
    object may come in, and a bool or a float is refused, compiled or not)."""
    value = validate_int("step", step)
    if value < 0:
        raise InvalidArgumentError(f"step must not be negative, got {value}")
    return f"step-{value}"


def key_of(step_or_key: str) -> str:
    """The key name a query's step-or-key text names: ``step-<N>`` for ASCII digits, else
    the text itself, checked as an id (see :func:`~oncelog.identity.validation.is_ascii_number`)."""
    if is_ascii_number(step_or_key):
        return step_key_name(int(step_or_key))
    return validate_id("key_name", step_or_key)


def request_hash(
    tool_name: object, params: Mapping[str, Any], dedup_fields: Sequence[str] | None = None
) -> str:
    """SHA-256 hex of canonical ``{"tool": tool_name, "params": restricted params}``.

    Only the ``dedup_fields`` of ``params`` count (all of them when None), so
    volatile fields such as timestamps never cause a conflict. Checks its
    arguments first, for a caller outside the SDK; the SDK checks them at its
    public call and hashes with :func:`request_hash_of_params`.
    """
    tool = validate_id("tool_name", tool_name)
    if not isinstance(params, Mapping):
        raise InvalidArgumentError(f"params must be a mapping, got {type(params).__name__}")
    fields = validate_dedup_fields(params, dedup_fields)
    return request_hash_of_params(tool, counted_params(params, fields))


def counted_params(params: Mapping[str, Any], fields: Sequence[str] | None) -> bytes:
    """The canonical bytes of what a request hash counts: the ``fields`` of ``params``
    (names :func:`validate_dedup_fields` passed), or all of them when None."""
    return canonical_json(params if fields is None else {name: params[name] for name in fields})


def request_hash_of_params(tool_name: str, canonical_params: bytes) -> str:
    """:func:`request_hash` of a checked tool name and the canonical bytes it counts.

    ``{"params": …, "tool": …}`` has its keys in canonical order already, so its
    canonical form is the params' bytes between two literals: the claim path has
    those bytes (it sends them) and need not canonicalize the params twice.
    """
    tool = json_string(tool_name).encode("utf-8")
    return sha256_hex(b'{"params":' + canonical_params + b',"tool":' + tool + b"}")


@functools.lru_cache(maxsize=4096)
def _uuid5_of(first: str, second: str) -> str:
    # Hash first: uuid5 then sees a fixed-size digest, whatever the input length.
    # Memoized: a claim and the completion after it derive the same ids (the
    # completion's operation id, the idempotency key of both answers), and a
    # derivation costs more than the lookup (docs/performance.md, "Figures behind
    # the code's comments"). The arguments are validated ids, so the
    # canonical JSON of the pair is the two quoted strings in brackets.
    pair = f"[{json_string(first)},{json_string(second)}]".encode()
    return uuid5_text(sha256_hex(pair))


_NAMESPACE_BYTES: Final = ONCELOG_NAMESPACE.bytes


_VARIANT_DIGITS: Final = "89ab"


def uuid5_text(name: str) -> str:
    """``str(uuid.uuid5(ONCELOG_NAMESPACE, name))`` without building a UUID (cheaper)."""
    h = hashlib.sha1(_NAMESPACE_BYTES + name.encode()).hexdigest()
    # The version nibble (hex digit 12) is 5; the variant's two bits are 10, so hex digit
    # 16 keeps only its low two bits of the hash: 8, 9, a or b (RFC 4122).
    variant = _VARIANT_DIGITS[int(h[16], 16) & 3]
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{variant}{h[17:20]}-{h[20:32]}"


def operation_id(channel_id: object, key_name: object) -> str:
    """UUIDv5 naming one operation: the Kafka message key of all its records.

    Checks both ids first (:class:`~oncelog.errors.InvalidArgumentError`), for a
    caller handed them from outside: a query, a record on the log. The SDK checks
    them once, at its public call, and derives with :func:`operation_id_unchecked`.
    """
    return _uuid5_of(validate_id("channel_id", channel_id), validate_id("key_name", key_name))


def operation_id_unchecked(channel_id: str, key_name: str) -> str:
    """:func:`operation_id` of two ids that :func:`validate_id` passed already: no check here."""
    return _uuid5_of(channel_id, key_name)


def idempotency_key(operation_id: object, request_hash: object) -> str:
    """UUIDv5 over (operation_id, request_hash): what a tool passes downstream."""
    return _uuid5_of(
        validate_id("operation_id", operation_id), validate_id("request_hash", request_hash)
    )
