"""The SDK boundary: each bad argument of a public call, its typed error and its message.

Every argument is checked once, by the public call that takes it
(:class:`~oncelog.producer.calls.RequestBuilder`, behind both clients); the layers below
take checked values. These cases pin the error each argument raises (its stable ``code``
and its message, the hint a caller reads) so that moving a check cannot change them,
and show that nothing reached the log: the in-memory ledger's log is read back in process.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import SecretStr

from oncelog.errors import InvalidArgumentError
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings
from oncelog.testing import InMemoryLedger

NAN = float("nan")
OK: dict[str, Any] = {"tool_name": "t", "params": {"a": 1}}
BAD_ARGS = "invalid_argument"
BAD_JSON = "non_canonical_json"


def _nested(depth: int) -> dict[str, Any]:
    """An object ``depth`` levels deep: ``{"a": {"a": ... {}}}``."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


NESTED_101 = _nested(101)
NESTED_5000 = _nested(5000)

# (case, positional arguments, keyword arguments, code, message)
BAD_CLAIMS: list[tuple[str, tuple[Any, ...], dict[str, Any], str, str]] = [
    ("empty channel", ("", "k"), OK, BAD_ARGS, "channel_id must not be empty"),
    ("long channel", ("c" * 257, "k"), OK, BAD_ARGS, "channel_id is 257 UTF-8 bytes, at most 256"),
    (
        "control channel",
        ("a\nb", "k"),
        OK,
        BAD_ARGS,
        "channel_id must not contain control characters",
    ),
    ("int channel", (42, "k"), OK, BAD_ARGS, "channel_id must be a string, got int"),
    ("empty key", ("run", ""), OK, BAD_ARGS, "key_name must not be empty"),
    (
        "key and step",
        ("run", "k"),
        {**OK, "step": 1},
        BAD_ARGS,
        "give exactly one of key_name and step",
    ),
    ("no key, no step", ("run",), OK, BAD_ARGS, "give exactly one of key_name and step"),
    (
        "negative step",
        ("run",),
        {**OK, "step": -1},
        BAD_ARGS,
        "step=-1 is outside [0, 9007199254740991]",
    ),
    ("bool step", ("run",), {**OK, "step": True}, BAD_ARGS, "step must be an integer, got bool"),
    ("empty tool", ("run", "k"), {**OK, "tool_name": ""}, BAD_ARGS, "tool_name must not be empty"),
    (
        "int tool",
        ("run", "k"),
        {**OK, "tool_name": 7},
        BAD_ARGS,
        "tool_name must be a string, got int",
    ),
    (
        "list params",
        ("run", "k"),
        {**OK, "params": [1]},
        BAD_ARGS,
        "params must be a mapping, got list",
    ),
    (
        "NaN param",
        ("run", "k"),
        {**OK, "params": {"x": NAN}},
        BAD_JSON,
        "nan has no canonical JSON form",
    ),
    (
        "int param key",
        ("run", "k"),
        {**OK, "params": {1: "x"}},
        BAD_JSON,
        "object key 1 is not a string",
    ),
    (
        "params over 1 MiB",
        ("run", "k"),
        {**OK, "params": {"x": "a" * 1024 * 1024}},
        BAD_ARGS,
        "params is 1048584 bytes of canonical JSON, at most 1048576",
    ),
    (
        "missing dedup field",
        ("run", "k"),
        {**OK, "dedup_fields": ["nope"]},
        BAD_ARGS,
        "dedup_fields entry 'nope' is not in params",
    ),
    (
        "dedup fields a string",
        ("run", "k"),
        {**OK, "dedup_fields": "a"},
        BAD_ARGS,
        "dedup_fields must be a list of field names or None",
    ),
    (
        "dedup field not a string",
        ("run", "k"),
        {**OK, "dedup_fields": [1]},
        BAD_ARGS,
        "dedup_fields entry 1 is not a string",
    ),
    (
        "dedup with list params",
        ("run", "k"),
        {**OK, "params": [1], "dedup_fields": ["a"]},
        BAD_ARGS,
        "params must be a mapping, got list",
    ),
    (
        "lease under 1 s",
        ("run", "k"),
        {**OK, "lease_seconds": 0.5},
        BAD_ARGS,
        "lease_seconds=0.5 is outside [1, 86400]",
    ),
    (
        "lease a string",
        ("run", "k"),
        {**OK, "lease_seconds": "60"},
        BAD_ARGS,
        "lease_seconds must be a number, got str",
    ),
    (
        "lease a bool",
        ("run", "k"),
        {**OK, "lease_seconds": True},
        BAD_ARGS,
        "lease_seconds must be a number, got bool",
    ),
    (
        "retention zero",
        ("run", "k"),
        {**OK, "retention_seconds": 0},
        BAD_ARGS,
        "retention_seconds=0 is outside [0.001, 3.1536e+09]",
    ),
    (
        "retention past an Avro long",
        ("run", "k"),
        {**OK, "retention_seconds": 1e20},
        BAD_ARGS,
        "retention_seconds=1e+20 is outside [0.001, 3.1536e+09]",
    ),
    (
        "retention infinite",
        ("run", "k"),
        {**OK, "retention_seconds": float("inf")},
        BAD_ARGS,
        "retention_seconds=inf is outside [0.001, 3.1536e+09]",
    ),
    (
        "lease not a number",
        ("run", "k"),
        {**OK, "lease_seconds": float("nan")},
        BAD_ARGS,
        "lease_seconds=nan is outside [1, 86400]",
    ),
    (
        "step past 2**53 - 1",
        ("run",),
        {**OK, "step": 2**53},
        BAD_ARGS,
        "step=9007199254740992 is outside [0, 9007199254740991]",
    ),
    (
        "params nested too deeply",
        ("run", "k"),
        {**OK, "params": NESTED_101},
        BAD_ARGS,
        "params nests objects and arrays more than 100 deep",
    ),
    (
        "params nested past the recursion limit",
        ("run", "k"),
        {**OK, "params": NESTED_5000},
        BAD_ARGS,
        "params nests objects and arrays more than 100 deep",
    ),
    (
        "unknown effect",
        ("run", "k"),
        {**OK, "effect": "maybe"},
        BAD_ARGS,
        "effect must be 'pure' or 'external', got 'maybe'",
    ),
]


@pytest.fixture
def ledger() -> InMemoryLedger:
    return InMemoryLedger()


@pytest.fixture
def client(ledger: InMemoryLedger) -> SyncLedgerClient:
    return ledger.sync_client()


def _refused(call: Callable[[], object]) -> InvalidArgumentError:
    with pytest.raises(InvalidArgumentError) as caught:
        call()
    return caught.value


@pytest.mark.parametrize(
    ("case", "args", "kwargs", "code", "message"), BAD_CLAIMS, ids=[c[0] for c in BAD_CLAIMS]
)
def test_a_bad_claim_argument_is_refused_before_anything_is_produced(
    client: SyncLedgerClient,
    ledger: InMemoryLedger,
    case: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    code: str,
    message: str,
) -> None:
    error = _refused(lambda: client.claim_execution(*args, **kwargs))
    assert (error.code, error.message) == (code, message), case
    assert ledger.log == []


def test_a_good_claim_is_produced(client: SyncLedgerClient, ledger: InMemoryLedger) -> None:
    """The checks above can fail: a claim that passes them reaches the log."""
    client.claim_execution("run", "k", **OK, dedup_fields=["a"])
    client.claim_execution("run", step=3, **OK)
    assert len(ledger.log) == 2


def test_a_bad_worker_id_is_refused_when_the_client_is_made(ledger: InMemoryLedger) -> None:
    error = _refused(lambda: ledger.sync_client(worker_id="w\x00"))
    assert error.message == "worker_id must not contain control characters"


def test_bad_follow_up_arguments_are_refused_before_anything_is_produced(
    client: SyncLedgerClient, ledger: InMemoryLedger
) -> None:
    claim = client.claim_execution("run-v", "k", tool_name="t", params={})
    ex, token, op = claim.execution, claim.claim_token, claim.execution.id
    loose: Any = client  # the calls below pass what the signatures refuse
    token_hint = "claim_token must be the non-empty string a claim returned"
    reason_hint = "reason must be a string of at most 4096 bytes"
    unknown = "unknown execution 'nope': pass the Execution, or channel_id and key_name"
    big = "r" * 1024 * 1024
    cases: list[tuple[Callable[[], object], str, str]] = [
        (
            lambda: loose.complete_execution(ex, token, NAN),
            BAD_JSON,
            "nan has no canonical JSON form",
        ),
        (
            lambda: loose.complete_execution(ex, token, big),
            BAD_ARGS,
            "result is 1048578 bytes of canonical JSON, at most 1048576",
        ),
        (lambda: loose.complete_execution(ex, "", "ok"), BAD_ARGS, token_hint),
        (lambda: loose.complete_execution("nope", token, "ok"), BAD_ARGS, unknown),
        (
            lambda: loose.complete_execution(op, token, "ok", channel_id="other", key_name="k"),
            BAD_ARGS,
            f"other/k is not execution {op}",
        ),
        (
            lambda: loose.complete_execution(op, token, "ok", channel_id="", key_name="k"),
            BAD_ARGS,
            "channel_id must not be empty",
        ),
        (
            lambda: loose.fail_execution(ex, token, 42),
            BAD_ARGS,
            "error must be a string of at most 1 MiB",
        ),
        (lambda: loose.fail_execution(ex, token, "e", "yes"), BAD_ARGS, "retryable must be a bool"),
        (lambda: loose.fail_execution(ex, None, "e"), BAD_ARGS, token_hint),
        (
            lambda: loose.complete_execution(ex, token, "ok", reconciled="maybe"),
            BAD_ARGS,
            "reconciled must be 'found', 'not_found' or None, got 'maybe'",
        ),
        (
            lambda: loose.fail_execution(ex, token, "e", reconciled=True),
            BAD_ARGS,
            "reconciled must be 'found', 'not_found' or None, got True",
        ),
        (
            lambda: loose.heartbeat_execution(ex, token, lease_seconds=0),
            BAD_ARGS,
            "lease_seconds=0 is outside [1, 86400]",
        ),
        (
            lambda: loose.heartbeat_execution(ex, token, lease_seconds="5"),
            BAD_ARGS,
            "lease_seconds must be a number, got str",
        ),
        (lambda: loose.heartbeat_execution(ex, "t" * 257), BAD_ARGS, token_hint),
        (lambda: loose.release_execution(ex, None), BAD_ARGS, token_hint),
        (lambda: loose.cancel_execution(ex, reason="r" * 5000), BAD_ARGS, reason_hint),
        (lambda: loose.cancel_execution(ex, reason=5), BAD_ARGS, reason_hint),
        (lambda: loose.get_execution("nope"), BAD_ARGS, unknown),
        (
            lambda: loose.get_execution(dataclasses.replace(ex, key_name="a\x00")),
            BAD_ARGS,
            "key_name must not contain control characters",
        ),
    ]
    produced = len(ledger.log)
    for call, code, message in cases:
        error = _refused(call)
        assert (error.code, error.message) == (code, message)
    assert len(ledger.log) == produced


def test_a_completion_carries_how_it_reconciled(
    client: SyncLedgerClient, ledger: InMemoryLedger
) -> None:
    claim = client.claim_execution("run-c", "k", tool_name="t", params={})
    client.complete_execution(claim.execution, claim.claim_token, "ok", reconciled="found")
    assert [r.request.reconciled for r in ledger.log] == [None, "found"]


def test_a_receipt_refuses_a_bad_ttl() -> None:
    settings = Settings(topic_prefix="memory", receipt_key=SecretStr("receipt-key-of-the-test"))
    client = InMemoryLedger(settings=settings).sync_client()
    claim = client.claim_execution("run-r", "k", tool_name="t", params={})
    done = client.complete_execution(claim.execution, claim.claim_token, "ok")
    loose: Any = client
    assert _refused(lambda: loose.receipt(done, ttl_seconds=0)).message == (
        "ttl_seconds=0 is outside [0.001, 3.1536e+09]"
    )
    assert _refused(lambda: loose.receipt(done, ttl_seconds="1")).message == (
        "ttl_seconds must be a number, got str"
    )
