"""Canonical JSON: the bytes every SDK hashes."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oncelog.errors import CanonicalJsonError
from oncelog.identity.canonical_json import canonical_json


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
