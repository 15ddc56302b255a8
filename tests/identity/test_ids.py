"""Identity: request hashes, UUIDv5 ids, and the published vectors."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oncelog.errors import CanonicalJsonError, InvalidArgumentError
from oncelog.identity.canonical_json import canonical_json, sha256_hex
from oncelog.identity.ids import (
    ONCELOG_NAMESPACE,
    counted_params,
    idempotency_key,
    operation_id,
    operation_id_unchecked,
    request_hash,
    request_hash_of_params,
    step_key_name,
    uuid5_text,
)
from oncelog.identity.validation import validate_id, validate_params
from tests.identity.test_canonical_json import json_values

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
    assert uuid.uuid5(uuid.NAMESPACE_URL, "urn:oncelog:identity:v2") == ONCELOG_NAMESPACE
    assert uuid.UUID(idempotency_key(str(op), "ab" * 32)).version == 5


@given(st.text())
def test_uuid5_text_is_the_standard_uuid5(name: str) -> None:
    try:
        name.encode()
    except UnicodeEncodeError:
        return  # lone surrogates: ids are validated before they get here
    assert uuid5_text(name) == str(uuid.uuid5(ONCELOG_NAMESPACE, name))


@given(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=40))
def test_memoized_ids_match_the_general_canonical_json(channel: str, key: str) -> None:
    try:
        validate_id("channel_id", channel)
        validate_id("key_name", key)
    except InvalidArgumentError:
        return
    general = uuid.uuid5(ONCELOG_NAMESPACE, sha256_hex(canonical_json([channel, key])))
    assert operation_id(channel, key) == str(general)
    assert operation_id_unchecked(channel, key) == str(general)


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
            step_key_name(bad)


@given(
    st.text(min_size=1, max_size=30),
    st.dictionaries(st.text(max_size=8), json_values, max_size=5),
)
def test_the_hash_of_canonical_params_is_the_general_canonical_form(tool: str, params: Any) -> None:
    try:
        validate_id("tool_name", tool)
        canonical = validate_params(params)
    except (InvalidArgumentError, CanonicalJsonError):
        return  # control characters, lone surrogates: refused before any hash
    general = sha256_hex(canonical_json({"tool": tool, "params": params}))
    assert request_hash_of_params(tool, canonical) == general
    assert request_hash(tool, params) == general


def test_the_counted_params_are_the_dedup_fields_only() -> None:
    params = {"id": 1, "ts": 2, "b": [3]}
    assert counted_params(params, ("id", "b")) == canonical_json({"b": [3], "id": 1})
    assert counted_params(params, None) == canonical_json(params)
