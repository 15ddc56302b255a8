"""Generate hostile records for the requests topic, each labelled with what must happen.

Kinds: random bytes, truncated records, wrong fingerprints, an unknown request
kind, impossible values (negative or huge lease, oversized params, a wrong
operation id or partition, a missing token) — all must be dead-lettered — and a
claim token of another operation, which is valid Avro and must be fenced, not
dead-lettered.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from typing import Final

from oncelog.identity import ids
from oncelog.identity.partitioner import partition_for
from oncelog.schemas.codec import encode_request
from oncelog.schemas.models import BODY_KIND, Claim, Complete, Effect, Heartbeat, Request

KINDS: Final = (
    "random_bytes", "truncated", "wrong_fingerprint", "unknown_kind", "negative_lease",
    "huge_lease", "oversized_params", "wrong_operation_id", "wrong_partition", "missing_token",
    "foreign_token",
)  # fmt: skip
_BIG_PARAMS: Final = b'{"x":"' + b"a" * (1024 * 1024) + b'"}'


@dataclass(frozen=True, slots=True)
class Hostile:
    """One record to write, where, and whether the projector must dead-letter it."""

    kind: str
    partition: int
    key: bytes
    value: bytes
    dead_letter: bool


def _claim(rng: random.Random, lease_ms: int = 60_000, params: bytes = b"{}") -> Claim:
    return Claim("tool", params, f"{rng.getrandbits(256):064x}", lease_ms, 60_000,
                 Effect.EXTERNAL, "fuzzer")  # fmt: skip


def _request(rng: random.Random, body: Claim | Complete | Heartbeat, **kw: object) -> Request:
    channel = f"fuzz-{rng.randrange(50)}"
    key = f"k-{rng.randrange(1000)}"
    fields: dict[str, object] = {
        "request_id": str(uuid.UUID(int=rng.getrandbits(128))),
        "operation_id": ids.operation_id(channel, key),
        "channel_id": channel, "key_name": key, "claim_token": f"{rng.getrandbits(128):032x}",
        "body": body,
    }  # fmt: skip
    fields.update(kw)
    return Request(**fields)  # type: ignore[arg-type]


def _placed(kind: str, request: Request, partitions: int, value: bytes, dead: bool) -> Hostile:
    home = partition_for(request.channel_id, partitions)
    return Hostile(kind, home, request.operation_id.encode(), value, dead)


def hostile(rng: random.Random, partitions: int, kind: str | None = None) -> Hostile:
    """One hostile record of ``kind`` (random when None)."""
    kind = kind or rng.choice(KINDS)
    valid = _request(rng, _claim(rng))
    encoded = encode_request(valid)
    if kind == "random_bytes":
        junk = rng.randbytes(rng.randrange(0, 300))
        return Hostile(kind, rng.randrange(partitions), b"x", junk, True)
    if kind == "truncated":
        return _placed(kind, valid, partitions, encoded[: rng.randrange(len(encoded))], True)
    if kind == "wrong_fingerprint":
        bad = encoded[:2] + rng.randbytes(8) + encoded[10:]
        return _placed(kind, valid, partitions, bad, True)
    if kind == "unknown_kind":
        return _placed(
            kind,
            valid,
            partitions,
            _with_union_index(valid, encoded, len(BODY_KIND) + rng.randrange(50)),
            True,
        )
    return _impossible(rng, kind, partitions)


def _impossible(rng: random.Random, kind: str, partitions: int) -> Hostile:
    if kind == "negative_lease":
        request = _request(rng, _claim(rng, lease_ms=-rng.randrange(1, 10**9)))
    elif kind == "huge_lease":
        request = _request(rng, _claim(rng, lease_ms=10**12))
    elif kind == "oversized_params":
        request = _request(rng, _claim(rng, params=_BIG_PARAMS))
    elif kind == "wrong_operation_id":
        request = _request(rng, _claim(rng), operation_id=str(uuid.UUID(int=rng.getrandbits(128))))
    elif kind == "missing_token":
        request = _request(rng, Heartbeat(None), claim_token=None)
    elif kind == "wrong_partition":
        request = _request(rng, _claim(rng))
        home = partition_for(request.channel_id, partitions)
        other = (home + 1 + rng.randrange(partitions - 1)) % partitions if partitions > 1 else home
        dead = other != home
        return Hostile(kind, other, request.operation_id.encode(), encode_request(request), dead)
    elif kind == "foreign_token":
        # Valid in every field: the fold fences it (stale_claim), nothing to dead-letter.
        request = _request(rng, Complete(b'{"stolen":true}'))
        return _placed(kind, request, partitions, encode_request(request), False)
    else:
        raise ValueError(f"unknown hostile kind {kind!r}")
    return _placed(kind, request, partitions, encode_request(request), True)


def _with_union_index(request: Request, encoded: bytes, index: int) -> bytes:
    """The record with its body replaced by an out-of-range union branch."""
    prefix_len = 10 + sum(
        len(_long(len(s.encode()))) + len(s.encode())
        for s in (request.request_id, request.operation_id, request.channel_id, request.key_name)
    )
    token = request.claim_token or ""
    token_part = b"\x02" + _long(len(token)) + token.encode()
    return encoded[:prefix_len] + token_part + _long(index)


def _long(n: int) -> bytes:
    """Avro's zig-zag varint."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)
