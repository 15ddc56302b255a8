"""Receipts through the public path (``client.receipt``): deterministic, verifiable offline,
and every kind of tampering is refused.

The executions come from the in-memory ledger (the real fold), on a clock that
starts at ``T0`` and moves only when told.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest
from pydantic import SecretStr

from oncelog.errors import ConfigError, InvalidArgumentError, ReceiptError
from oncelog.identity.canonical_json import canonical_json
from oncelog.identity.ids import idempotency_key, operation_id
from oncelog.producer.results import Execution
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.receipts import (
    BadSignatureError,
    MalformedReceiptError,
    NotCompletedError,
    ReceiptExpiredError,
    receipt_key,
    verify_receipt,
)
from oncelog.settings import Settings
from oncelog.testing import InMemoryLedger, ManualClock

KEY = b"k" * 32
TTL = 3_600_000
TTL_S = TTL / 1000
T0 = 1_000_000  # log time of the completion (in 1970: the wall clock has long passed it)
OP = operation_id("run-42", "step-3")
PARAMS = {"order_id": "4471"}


def ledger(key: str = KEY.decode()) -> InMemoryLedger:
    settings = Settings(receipt_key=SecretStr(key), topic_prefix="memory", partitions=3)
    return InMemoryLedger(clock=ManualClock(T0), settings=settings)


def completed(on: InMemoryLedger | None = None) -> tuple[SyncLedgerClient, Execution]:
    client = (on or ledger()).sync_client(worker_id="w1")
    claim = client.claim_execution("run-42", step=3, tool_name="charge", params=PARAMS)
    return client, client.complete_execution(claim.execution, claim.claim_token, "ok")


def issue() -> str:
    client, done = completed()
    return client.receipt(done, ttl_seconds=TTL_S)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_round_trip_carries_the_claims() -> None:
    client, done = completed()
    claims = verify_receipt(client.receipt(done, ttl_seconds=TTL_S), KEY, now_ms=T0 + 1)
    assert claims.operation_id == OP
    assert claims.idempotency_key == idempotency_key(OP, done.request_hash)
    assert (claims.result_hash, claims.epoch) == (done.result_hash, 1)
    assert done.completed_at_ms == T0
    assert claims.expires_at_ms == T0 + TTL


def test_the_same_completed_execution_re_derives_the_same_receipt() -> None:
    memory = ledger()
    client, done = completed(memory)
    first = client.receipt(done, ttl_seconds=TTL_S)
    memory.advance(900)
    assert client.receipt(done, ttl_seconds=TTL_S) == first


def test_a_text_key_equals_its_utf8_bytes() -> None:
    assert verify_receipt(issue(), KEY.decode(), now_ms=T0 + 1).epoch == 1


def test_only_completed_executions_get_receipts() -> None:
    memory = ledger()
    client = memory.sync_client()
    claimed = client.claim_execution("run-42", "k1", tool_name="t", params={})
    failing = client.claim_execution("run-42", "k2", tool_name="t", params={})
    failed = client.fail_execution(failing.execution, failing.claim_token, "boom")
    _, done = completed(memory)
    memory.advance(7 * 24 * 3600 + 1)  # past the default retention: the sweep expires it
    memory.sweep()
    expired = client.get_execution(done)
    assert expired is not None
    for execution in (claimed.execution, failed, expired):
        with pytest.raises(NotCompletedError) as info:
            client.receipt(execution, ttl_seconds=TTL_S)
        assert info.value.code == "not_completed"
    assert [e.status for e in (claimed.execution, failed, expired)] == [
        "claimed", "failed", "expired",
    ]  # fmt: skip


@pytest.mark.parametrize("ttl_seconds", [0, -5, True, float("inf"), 1e20])
def test_ttl_must_be_positive(ttl_seconds: float) -> None:
    client, done = completed()
    with pytest.raises(InvalidArgumentError):
        client.receipt(done, ttl_seconds=ttl_seconds)


def test_an_already_expired_receipt_is_not_issued() -> None:
    memory = ledger()
    client, done = completed(memory)
    memory.advance(TTL_S)
    with pytest.raises(ReceiptExpiredError):
        client.receipt(done, ttl_seconds=TTL_S)


def test_expired_receipt_is_rejected() -> None:
    token = issue()
    verify_receipt(token, KEY, now_ms=T0 + TTL - 1)
    with pytest.raises(ReceiptExpiredError) as info:
        verify_receipt(token, KEY, now_ms=T0 + TTL)
    assert (info.value.code, info.value.reason) == ("invalid_receipt", "expired")


def test_wall_clock_default_rejects_a_receipt_from_1970() -> None:
    with pytest.raises(ReceiptExpiredError):
        verify_receipt(issue(), KEY)


def test_wrong_key_is_rejected() -> None:
    token = issue()
    with pytest.raises(BadSignatureError) as info:
        verify_receipt(token, b"another key", now_ms=T0 + 1)
    assert (info.value.code, info.value.reason) == ("invalid_receipt", "bad_signature")


def test_forged_signature_is_rejected() -> None:
    payload, _ = issue().split(".")
    with pytest.raises(BadSignatureError):
        verify_receipt(f"{payload}.{b64(b'x' * 32)}", KEY, now_ms=T0 + 1)


@pytest.mark.parametrize(("field", "value"), [("ep", 2), ("exp", 10**15), ("rh", "0" * 64)])
def test_altered_field_is_rejected(field: str, value: object) -> None:
    payload, mac = issue().split(".")
    claims = json.loads(unb64(payload))
    claims[field] = value
    with pytest.raises(BadSignatureError):
        verify_receipt(f"{b64(canonical_json(claims))}.{mac}", KEY, now_ms=T0 + 1)


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


def test_an_empty_key_is_refused() -> None:
    client, done = completed(ledger(key=""))
    with pytest.raises(ConfigError):
        client.receipt(done, ttl_seconds=TTL_S)


def test_key_comes_from_settings() -> None:
    assert receipt_key(Settings(receipt_key=SecretStr("s3cret"))) == b"s3cret"
    with pytest.raises(ConfigError):
        receipt_key(Settings(receipt_key=None))


def test_an_empty_verification_key_is_refused() -> None:
    with pytest.raises(InvalidArgumentError):
        verify_receipt(issue(), b"", now_ms=T0 + 1)
