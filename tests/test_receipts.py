"""Receipts: deterministic, verifiable offline, and every kind of tampering is refused."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest
from pydantic import SecretStr

from oncelog.errors import ConfigError, InvalidArgumentError, ReceiptError
from oncelog.identity.canonical_json import canonical_json
from oncelog.identity.ids import idempotency_key, operation_id, request_hash
from oncelog.projector.fold import fold
from oncelog.receipts import (
    BadSignatureError,
    MalformedReceiptError,
    NotCompletedError,
    ReceiptExpiredError,
    make_receipt,
    receipt_key,
    verify_receipt,
)
from oncelog.schemas.models import (
    Claim,
    Complete,
    Effect,
    ExecutionState,
    Request,
    Status,
    evolve,
)
from oncelog.settings import Settings

KEY = b"k" * 32
TTL = 3_600_000
OP = operation_id("run-42", "step-3")
PARAMS = {"order_id": "4471"}


def _request(token: str, body: Claim | Complete, rid: str) -> Request:
    return Request(rid, OP, "run-42", "step-3", token, body)


def completed() -> ExecutionState:
    claim = Claim(
        "charge", canonical_json(PARAMS), request_hash("charge", PARAMS), 10_000, 60_000,
        Effect.EXTERNAL, "w1",
    )  # fmt: skip
    state, _ = fold(None, _request("t1", claim, "r1"), 1_000)
    state, _ = fold(state, _request("t1", Complete(b'"ok"'), "r2"), 2_000)
    assert state is not None
    assert state.status is Status.COMPLETED
    return state


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_round_trip_carries_the_claims() -> None:
    state = completed()
    claims = verify_receipt(make_receipt(state, KEY, ttl_ms=TTL, now_ms=2_000), KEY, now_ms=2_001)
    assert claims.operation_id == OP
    assert claims.idempotency_key == idempotency_key(OP, state.request_hash)
    assert (claims.result_hash, claims.epoch) == (state.result_hash, 1)
    assert claims.expires_at_ms == 2_000 + TTL


def test_the_same_completed_execution_re_derives_the_same_receipt() -> None:
    first = make_receipt(completed(), KEY, ttl_ms=TTL, now_ms=2_000)
    again = make_receipt(completed(), KEY, ttl_ms=TTL, now_ms=900_000)
    assert first == again


def test_a_text_key_equals_its_utf8_bytes() -> None:
    token = make_receipt(completed(), KEY, ttl_ms=TTL, now_ms=2_000)
    assert verify_receipt(token, KEY.decode(), now_ms=2_001).epoch == 1


@pytest.mark.parametrize("status", [Status.CLAIMED, Status.FAILED, Status.EXPIRED])
def test_only_completed_states_get_receipts(status: Status) -> None:
    with pytest.raises(NotCompletedError) as info:
        make_receipt(evolve(completed(), status=status), KEY, ttl_ms=TTL, now_ms=2_000)
    assert info.value.code == "not_completed"


@pytest.mark.parametrize("ttl", [0, -5, True])
def test_ttl_must_be_positive(ttl: int) -> None:
    with pytest.raises(InvalidArgumentError):
        make_receipt(completed(), KEY, ttl_ms=ttl, now_ms=2_000)


def test_an_already_expired_receipt_is_not_issued() -> None:
    with pytest.raises(ReceiptExpiredError):
        make_receipt(completed(), KEY, ttl_ms=TTL, now_ms=2_000 + TTL)


def test_expired_receipt_is_rejected() -> None:
    token = make_receipt(completed(), KEY, ttl_ms=TTL, now_ms=2_000)
    verify_receipt(token, KEY, now_ms=2_000 + TTL - 1)
    with pytest.raises(ReceiptExpiredError) as info:
        verify_receipt(token, KEY, now_ms=2_000 + TTL)
    assert (info.value.code, info.value.reason) == ("invalid_receipt", "expired")


def test_wall_clock_default_rejects_a_receipt_from_1970() -> None:
    token = make_receipt(completed(), KEY, ttl_ms=TTL, now_ms=2_000)
    with pytest.raises(ReceiptExpiredError):
        verify_receipt(token, KEY)


def test_wrong_key_is_rejected() -> None:
    token = make_receipt(completed(), KEY, ttl_ms=TTL, now_ms=2_000)
    with pytest.raises(BadSignatureError) as info:
        verify_receipt(token, b"another key", now_ms=2_001)
    assert (info.value.code, info.value.reason) == ("invalid_receipt", "bad_signature")


def test_forged_signature_is_rejected() -> None:
    payload, _ = make_receipt(completed(), KEY, ttl_ms=TTL, now_ms=2_000).split(".")
    with pytest.raises(BadSignatureError):
        verify_receipt(f"{payload}.{b64(b'x' * 32)}", KEY, now_ms=2_001)


@pytest.mark.parametrize(("field", "value"), [("ep", 2), ("exp", 10**15), ("rh", "0" * 64)])
def test_altered_field_is_rejected(field: str, value: object) -> None:
    payload, mac = make_receipt(completed(), KEY, ttl_ms=TTL, now_ms=2_000).split(".")
    claims = json.loads(unb64(payload))
    claims[field] = value
    with pytest.raises(BadSignatureError):
        verify_receipt(f"{b64(canonical_json(claims))}.{mac}", KEY, now_ms=2_001)


def signed(payload: bytes) -> str:
    """A correctly signed token around an arbitrary payload (as if the key leaked)."""
    return f"{b64(payload)}.{b64(hmac.new(KEY, payload, hashlib.sha256).digest())}"


@pytest.mark.parametrize(
    "token",
    [
        "",
        "no-dot",
        "a.b.c",
        "a b.c",
        "====.abcd",
        "x" * 5_000 + ".y",
        signed(b"not json"),
        signed(b"\xff\xfe"),
        signed(b"[1, 2]"),
        signed(canonical_json({"v": 1, "op": "x"})),
        signed(canonical_json({"v": 2, "op": "o", "ik": "i", "rh": "r", "ep": 1, "exp": 9})),
        signed(canonical_json({"v": 1, "op": "o", "ik": "i", "rh": "r", "ep": "1", "exp": 9})),
        signed(canonical_json({"v": 1, "op": "o", "ik": "i", "rh": "r", "ep": True, "exp": 9})),
    ],
)
def test_malformed_tokens_are_rejected(token: str) -> None:
    with pytest.raises(MalformedReceiptError) as info:
        verify_receipt(token, KEY, now_ms=0)
    assert isinstance(info.value, ReceiptError)
    assert (info.value.code, info.value.reason) == ("invalid_receipt", "malformed")


def test_empty_key_is_refused() -> None:
    with pytest.raises(InvalidArgumentError):
        make_receipt(completed(), b"", ttl_ms=TTL, now_ms=2_000)


def test_key_comes_from_settings() -> None:
    assert receipt_key(Settings(receipt_key=SecretStr("s3cret"))) == b"s3cret"
    with pytest.raises(ConfigError):
        receipt_key(Settings(receipt_key=None))
