"""Every invalid SDK argument is a typed error raised before anything is produced.

Validation is pure, so it runs on the in-memory ledger: its log is read back in
process, so "nothing was produced" is a check that can fail (unlike a broker's
high watermark read right after an asynchronous produce).
"""

from __future__ import annotations

from typing import Any

import pytest

from oncelog.errors import InvalidArgumentError
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.testing import InMemoryLedger

OK: dict[str, Any] = {"tool_name": "t", "params": {"a": 1}}
NAN = float("nan")

INVALID_CLAIMS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("empty channel", ("", "k"), OK),
    ("channel too long", ("c" * 257, "k"), OK),
    ("control char in channel", ("run\n1", "k"), OK),
    ("channel not a string", (42, "k"), OK),
    ("empty key", ("run", ""), OK),
    ("slash in channel", ("acme/run-1", "k"), OK),
    ("slash in key", ("run", "charge/1"), OK),
    ("dot-segment channel", ("..", "k"), OK),
    ("dot-segment key", ("run", "."), OK),
    ("key of digits only", ("run", "42"), OK),
    ("key and step both", ("run", "k"), {**OK, "step": 1}),
    ("neither key nor step", ("run",), OK),
    ("negative step", ("run",), {**OK, "step": -1}),
    ("bool step", ("run",), {**OK, "step": True}),
    ("empty tool", ("run", "k"), {**OK, "tool_name": ""}),
    ("params not a mapping", ("run", "k"), {**OK, "params": [1, 2]}),
    ("NaN in params", ("run", "k"), {**OK, "params": {"x": NAN}}),
    ("infinity in params", ("run", "k"), {**OK, "params": {"x": float("inf")}}),
    ("non-string key in params", ("run", "k"), {**OK, "params": {1: "x"}}),
    ("unsupported type in params", ("run", "k"), {**OK, "params": {"x": object()}}),
    ("params over 1 MiB", ("run", "k"), {**OK, "params": {"x": "a" * (1024 * 1024)}}),
    ("dedup field missing", ("run", "k"), {**OK, "dedup_fields": ["nope"]}),
    ("dedup fields a string", ("run", "k"), {**OK, "dedup_fields": "a"}),
    ("lease under 1 s", ("run", "k"), {**OK, "lease_seconds": 0.5}),
    ("lease over 24 h", ("run", "k"), {**OK, "lease_seconds": 86_401}),
    ("lease not a number", ("run", "k"), {**OK, "lease_seconds": "60"}),
    ("retention zero", ("run", "k"), {**OK, "retention_seconds": 0}),
    ("unknown effect", ("run", "k"), {**OK, "effect": "maybe"}),
]


@pytest.fixture
def ledger() -> InMemoryLedger:
    return InMemoryLedger()


@pytest.fixture
def sync_client(ledger: InMemoryLedger) -> SyncLedgerClient:
    return ledger.sync_client()


def test_a_valid_call_is_produced(sync_client: SyncLedgerClient, ledger: InMemoryLedger) -> None:
    """The check below can fail: a call that passes validation does reach the log."""
    sync_client.claim_execution("run", "k", **OK)
    assert len(ledger.log) == 1


@pytest.mark.parametrize(
    ("case", "args", "kwargs"), INVALID_CLAIMS, ids=[c[0] for c in INVALID_CLAIMS]
)
def test_invalid_claim_arguments_raise_before_producing(
    sync_client: SyncLedgerClient,
    ledger: InMemoryLedger,
    case: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        sync_client.claim_execution(*args, **kwargs)
    assert info.value.code in {"invalid_argument", "non_canonical_json"}
    assert ledger.log == [], case


def test_invalid_follow_up_arguments_raise_before_producing(
    sync_client: SyncLedgerClient, ledger: InMemoryLedger
) -> None:
    client = sync_client
    claim = client.claim_execution("run-v", "k", tool_name="t", params={})
    ex, token = claim.execution, claim.claim_token
    before = len(ledger.log)
    bad_calls: list[Any] = [
        lambda: client.complete_execution(ex, token, {"x": NAN}),
        lambda: client.complete_execution(ex, token, "r" * (1024 * 1024 + 1)),
        lambda: client.complete_execution(ex, "", "ok"),
        lambda: client.complete_execution("unknown-id", token, "ok"),
        lambda: client.complete_execution(ex.id, token, "ok", channel_id="other", key_name="k"),
        lambda: client.fail_execution(ex, token, 42),  # type: ignore[arg-type]
        lambda: client.fail_execution(ex, token, "e", retryable="yes"),  # type: ignore[arg-type]
        lambda: client.heartbeat_execution(ex, token, lease_seconds=0),
        lambda: client.release_execution(ex, None),  # type: ignore[arg-type]
        lambda: client.cancel_execution(ex, reason="r" * 5000),
    ]
    for call in bad_calls:
        with pytest.raises(InvalidArgumentError):
            call()
    assert len(ledger.log) == before
