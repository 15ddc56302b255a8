"""Validation of ids, JSON sizes, leases and retentions."""

from __future__ import annotations

import pytest

from oncelog.errors import InvalidArgumentError
from oncelog.identity import validation
from oncelog.identity.ids import operation_id, request_hash
from oncelog.identity.validation import (
    MAX_JSON_BYTES,
    validate_id,
    validate_lease_ms,
    validate_params,
    validate_result,
    validate_retention_ms,
    validate_unique_id,
)


@pytest.mark.parametrize("bad", ["", "x" * 257, "é" * 129, "a\nb", "a\x00", "a\x7f", "a\x85", 3])
def test_validate_id_refuses_bad_ids(bad: object) -> None:
    with pytest.raises(InvalidArgumentError):
        validate_id("channel_id", bad)
    with pytest.raises(InvalidArgumentError):
        validate_unique_id("request_id", bad)


def test_a_unique_id_is_checked_but_not_remembered() -> None:
    assert validate_unique_id("request_id", "r-never-again") == "r-never-again"
    assert "r-never-again" not in validation._PASSED
    assert validate_id("key_name", "r-kept") == "r-kept"
    assert "r-kept" in validation._PASSED


def test_validate_id_accepts_256_utf8_bytes() -> None:
    assert validate_id("key_name", "é" * 128) == "é" * 128


def test_ids_are_validated_by_the_identity_functions() -> None:
    with pytest.raises(InvalidArgumentError):
        operation_id("", "k")
    with pytest.raises(InvalidArgumentError):
        request_hash("bad\ttool", {})


def test_params_and_result_limited_to_one_mebibyte() -> None:
    limit = MAX_JSON_BYTES
    ok = {"x": "a" * (limit - len(b'{"x":""}'))}
    assert len(validate_params(ok)) == limit
    with pytest.raises(InvalidArgumentError):
        validate_params({"x": "a" * limit})
    with pytest.raises(InvalidArgumentError):
        validate_result("a" * limit)
    with pytest.raises(InvalidArgumentError):
        validate_params([1])  # type: ignore[arg-type]


@pytest.mark.parametrize("lease", [1_000, 86_400_000])
def test_lease_bounds_are_inclusive(lease: int) -> None:
    assert validate_lease_ms(lease) == lease


@pytest.mark.parametrize("lease", [999, 86_400_001, 0, -5, 1.5, True, "1000"])
def test_lease_out_of_bounds(lease: object) -> None:
    with pytest.raises(InvalidArgumentError):
        validate_lease_ms(lease)


@pytest.mark.parametrize("retention", [0, -1, 2.0, None])
def test_retention_must_be_positive_int(retention: object) -> None:
    with pytest.raises(InvalidArgumentError):
        validate_retention_ms(retention)
    assert validate_retention_ms(1) == 1


def test_an_id_refused_once_is_refused_again() -> None:
    for _ in range(2):
        with pytest.raises(InvalidArgumentError):
            validate_id("key_name", "a\x00b")


def test_only_real_strings_are_taken_as_already_checked() -> None:
    assert validate_id("key_name", "seen-before") == "seen-before"

    class LooksLikeIt:  # hashes and compares as the checked id, but is no string
        def __hash__(self) -> int:
            return hash("seen-before")

        def __eq__(self, other: object) -> bool:
            return other == "seen-before"

    with pytest.raises(InvalidArgumentError, match="must be a string"):
        validate_id("key_name", LooksLikeIt())


def test_the_memory_of_checked_ids_is_bounded() -> None:
    for i in range(validation.PASSED_KEPT + 10):
        validate_id("key_name", f"bounded-{i}")
    assert len(validation._PASSED) <= validation.PASSED_KEPT
