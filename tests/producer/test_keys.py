"""Identity: canonical JSON, hashes, UUIDv5 ids, validation, and the published vectors."""

from __future__ import annotations

import json
import math
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oncelog.errors import CanonicalJsonError, InvalidArgumentError
from oncelog.producer import keys
from oncelog.producer.keys import (
    ONCELOG_NAMESPACE,
    canonical_json,
    idempotency_key,
    operation_id,
    request_hash,
    step_key_name,
    validate_id,
    validate_lease_ms,
    validate_params,
    validate_result,
    validate_retention_ms,
)

VECTORS = Path(__file__).parents[1] / "vectors" / "identity.json"


def _load_vectors() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(VECTORS.read_text("utf-8"))
    return data


@pytest.mark.parametrize("vector", _load_vectors(), ids=lambda v: v["input"]["key_name"][:20])
def test_published_identity_vectors(vector: dict[str, Any]) -> None:
    case = vector["input"]
    assert canonical_json(case["params"]).decode("utf-8") == vector["canonical_params"]
    rh = request_hash(case["tool_name"], case["params"], case["dedup_fields"])
    assert rh == vector["request_hash"]
    op = operation_id(case["channel_id"], case["key_name"])
    assert op == vector["operation_id"]
    assert idempotency_key(op, rh) == vector["idempotency_key"]


def test_vectors_are_varied_enough() -> None:
    assert len(_load_vectors()) >= 10


# --- canonical JSON ------------------------------------------------------------------


def test_canonical_json_sorts_keys_and_drops_whitespace() -> None:
    assert canonical_json({"b": [1, 2], "a": {"d": None, "c": True}}) == (
        b'{"a":{"c":true,"d":null},"b":[1,2]}'
    )


def test_canonical_json_is_utf8_not_ascii_escaped() -> None:
    assert canonical_json("é🦀") == '"é🦀"'.encode()


def test_canonical_json_keeps_big_ints_exact_and_floats_shortest() -> None:
    assert canonical_json([2**64 + 1, 0.1, 1e16, -0.0]) == b"[18446744073709551617,0.1,1e+16,-0.0]"


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, [1, {"x": math.nan}]])
def test_canonical_json_refuses_nan_and_infinity(value: object) -> None:
    with pytest.raises(CanonicalJsonError):
        canonical_json(value)


@pytest.mark.parametrize(
    "value", [{1: "a"}, {None: 1}, {(1,): 1}, b"bytes", {1, 2}, object(), "\ud800"]
)
def test_canonical_json_refuses_other_keys_and_types(value: object) -> None:
    with pytest.raises(CanonicalJsonError):
        canonical_json(value)


def test_canonical_json_refuses_absurd_nesting() -> None:
    value: list[Any] = []
    for _ in range(100_000):
        value = [value]
    with pytest.raises(CanonicalJsonError):
        canonical_json(value)


def test_bool_is_not_an_int() -> None:
    assert canonical_json([True, 1]) == b"[true,1]"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_canonical_json_round_trips_through_json_and_is_idempotent(value: Any) -> None:
    data = canonical_json(value)
    assert canonical_json(json.loads(data)) == data
    assert data == json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")


# --- hashes and ids ------------------------------------------------------------------


def test_request_hash_ignores_fields_outside_dedup_fields() -> None:
    a = request_hash("t", {"id": 1, "ts": 1}, ["id"])
    assert a == request_hash("t", {"id": 1, "ts": 2}, ["id"])
    assert a != request_hash("t", {"id": 2, "ts": 1}, ["id"])
    assert a != request_hash("u", {"id": 1, "ts": 1}, ["id"])


def test_request_hash_counts_all_params_without_dedup_fields() -> None:
    assert request_hash("t", {"id": 1, "ts": 1}) != request_hash("t", {"id": 1, "ts": 2})


def test_request_hash_refuses_missing_dedup_field() -> None:
    with pytest.raises(InvalidArgumentError, match="not in params"):
        request_hash("t", {"id": 1}, ["id", "missing"])


def test_request_hash_refuses_a_bare_string_as_dedup_fields() -> None:
    with pytest.raises(InvalidArgumentError):
        request_hash("t", {"id": 1}, "id")


def test_ids_are_uuid5_in_the_oncelog_namespace() -> None:
    op = uuid.UUID(operation_id("run-42", "step-1"))
    assert op.version == 5
    assert uuid.uuid5(uuid.NAMESPACE_URL, "urn:oncelog:identity:v1") == ONCELOG_NAMESPACE
    assert uuid.UUID(idempotency_key(str(op), "ab" * 32)).version == 5


@given(st.text())
def test_uuid5_text_is_the_standard_uuid5(name: str) -> None:
    try:
        name.encode()
    except UnicodeEncodeError:
        return  # lone surrogates: ids are validated before they get here
    assert keys.uuid5_text(name) == str(uuid.uuid5(keys.ONCELOG_NAMESPACE, name))


@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=40))
def test_memoized_ids_match_the_general_canonical_json(channel: str, key: str) -> None:
    try:
        keys.validate_id("channel_id", channel)
        keys.validate_id("key_name", key)
    except InvalidArgumentError:
        return
    general = uuid.uuid5(
        keys.ONCELOG_NAMESPACE, keys.sha256_hex(keys.canonical_json([channel, key]))
    )
    assert keys.operation_id(channel, key) == str(general)


def test_operation_id_pairs_are_unambiguous() -> None:
    # Naive concatenation would make these collide; the canonical pair does not.
    assert operation_id("a:b", "c") != operation_id("a", "b:c")
    assert operation_id("ab", "c") != operation_id("a", "bc")


def test_long_inputs_are_never_truncated() -> None:
    base = "x" * 255
    assert operation_id("c", base + "a") != operation_id("c", base + "b")


def test_step_key_name() -> None:
    assert step_key_name(7) == "step-7"
    for bad in (-1, True, 1.0):
        with pytest.raises(InvalidArgumentError):
            step_key_name(bad)  # type: ignore[arg-type]


# --- validation ----------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["", "x" * 257, "é" * 129, "a\nb", "a\x00", "a\x7f", "a\x85", 3])
def test_validate_id_refuses_bad_ids(bad: object) -> None:
    with pytest.raises(InvalidArgumentError):
        validate_id("channel_id", bad)


def test_validate_id_accepts_256_utf8_bytes() -> None:
    assert validate_id("key_name", "é" * 128) == "é" * 128


def test_ids_are_validated_by_the_identity_functions() -> None:
    with pytest.raises(InvalidArgumentError):
        operation_id("", "k")
    with pytest.raises(InvalidArgumentError):
        request_hash("bad\ttool", {})


def test_params_and_result_limited_to_one_mebibyte() -> None:
    limit = keys.MAX_JSON_BYTES
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
