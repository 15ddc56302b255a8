"""The write API's idempotency keys, without I/O: parsing, the key memory, claim tokens."""

from __future__ import annotations

import re
from contextlib import ExitStack
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oncelog.errors import IdempotencyKeyReusedError, InvalidArgumentError, RequestInFlightError
from oncelog.gateway.idempotency import ClaimTokens, KeyMemory, fingerprint, parse_key


@pytest.mark.parametrize(
    ("header", "key"),
    [
        (None, None),
        ('"8e03978e-40d5-43e8-bc93-6894a57f9324"', "8e03978e-40d5-43e8-bc93-6894a57f9324"),
        ("bare-key-1", "bare-key-1"),
        ('  "spaced"  ', "spaced"),
    ],
)
def test_a_key_is_an_sf_string_or_a_bare_value(header: str | None, key: str | None) -> None:
    assert parse_key(header) == key


@pytest.mark.parametrize("header", ['""', "", "a\x01b", "x" * 257])
def test_a_key_is_checked_as_a_request_id(header: str) -> None:
    with pytest.raises(InvalidArgumentError, match="Idempotency-Key"):
        parse_key(header)


def test_a_key_reused_with_another_payload_is_refused() -> None:
    keys = KeyMemory()
    with keys.hold("k", fingerprint("/v1/claims", {"n": 1})):
        pass
    other = fingerprint("/v1/claims", {"n": 2})
    with pytest.raises(IdempotencyKeyReusedError) as info, keys.hold("k", other):
        pytest.fail("a reused key must not run")
    assert (info.value.code, info.value.http_status) == ("idempotency_key_reused", 422)
    elsewhere = fingerprint("/v1/executions/x/complete", {"n": 1})
    with pytest.raises(IdempotencyKeyReusedError), keys.hold("k", elsewhere):
        pytest.fail("nor on another route")


def test_a_retry_runs_again_once_the_first_is_answered_not_before() -> None:
    keys = KeyMemory()
    print_ = fingerprint("/v1/claims", {"n": 1})
    ran = 0
    with keys.hold("k", print_):
        with pytest.raises(RequestInFlightError) as info, keys.hold("k", print_):
            pytest.fail("an in-flight key must not run twice at once")
        assert (info.value.code, info.value.http_status) == ("request_in_flight", 409)
    with keys.hold("k", print_):
        ran += 1
    assert ran == 1


def test_a_request_that_raised_leaves_its_key_retryable() -> None:
    keys = KeyMemory()
    print_ = fingerprint("/v1/claims", {})
    with pytest.raises(ZeroDivisionError), keys.hold("k", print_):
        _ = 1 / 0
    with keys.hold("k", print_):
        pass


def test_no_key_no_memory() -> None:
    keys = KeyMemory()
    with keys.hold(None, "a"), keys.hold(None, "a"):
        pass
    assert len(keys) == 0


def test_the_memory_is_bounded_in_count_and_in_age() -> None:
    now = [0.0]
    keys = KeyMemory(kept=3, kept_for_s=10, clock=lambda: now[0])
    for key in "abcd":
        with keys.hold(key, key):
            pass
    assert len(keys) == 3
    with keys.hold("a", "another payload: a was forgotten first"):
        pass
    now[0] = 11.0
    with keys.hold("e", "e"):
        pass
    assert len(keys) == 1


def test_a_claim_token_looks_like_a_fresh_one_and_is_the_same_for_a_retry() -> None:
    tokens = ClaimTokens(b"k" * 32)
    token = tokens.token("key-1", "run-1", "charge", None)
    assert re.fullmatch(r"[0-9a-f]{32}", token)
    assert tokens.token("key-1", "run-1", "charge", None) == token
    assert ClaimTokens(b"k" * 32).token("key-1", "run-1", "charge", None) == token
    assert ClaimTokens(b"j" * 32).token("key-1", "run-1", "charge", None) != token


def test_without_a_key_each_process_draws_its_own() -> None:
    assert ClaimTokens().token("k", "c", "n", None) != ClaimTokens().token("k", "c", "n", None)


names = st.text(min_size=1, max_size=20)


@given(
    st.tuples(names, names, st.none() | names, st.none() | st.integers(0, 99)),
    st.tuples(names, names, st.none() | names, st.none() | st.integers(0, 99)),
)
def test_distinct_claims_get_distinct_tokens(
    a: tuple[str, str, str | None, int | None], b: tuple[str, str, str | None, int | None]
) -> None:
    tokens = ClaimTokens(b"k" * 32)
    assert (tokens.token(*a) == tokens.token(*b)) == (a == b)


def test_memories_of_one_file_share_keys_in_flight_and_claim_key(tmp_path: Path) -> None:
    # Two memories of one file: two gateway workers (each its own SQLite connection).
    first, second = KeyMemory(path=tmp_path / "keys"), KeyMemory(path=tmp_path / "keys")
    print_ = fingerprint("/v1/claims", {"n": 1})
    with first.hold("k", print_), pytest.raises(RequestInFlightError), second.hold("k", print_):
        pytest.fail("in flight on the other worker")
    with pytest.raises(IdempotencyKeyReusedError), second.hold("k", fingerprint("/", {})):
        pytest.fail("a reuse on the other worker must not run")
    with second.hold("k", print_):
        pass
    assert first.claim_key() == second.claim_key() != KeyMemory().claim_key()


def test_a_request_in_flight_past_its_bound_frees_its_key() -> None:
    # A worker killed mid-request never clears its key: the bound does.
    now = [0.0]
    keys = KeyMemory(in_flight_for_s=30, clock=lambda: now[0])
    killed = ExitStack()  # entered, never left: the request of a killed worker
    killed.enter_context(keys.hold("k", "p"))
    with pytest.raises(RequestInFlightError), keys.hold("k", "p"):
        pytest.fail("still in flight")
    now[0] = 30.0
    with keys.hold("k", "p"):
        pass
