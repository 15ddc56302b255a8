"""Canonical JSON: the bytes every SDK hashes."""

from __future__ import annotations

import json
import math
import struct
from typing import Any

import pytest
import rfc8785
from hypothesis import given
from hypothesis import strategies as st

from oncelog.errors import CanonicalJsonError
from oncelog.identity.canonical_json import (
    MAX_SAFE_INTEGER,
    NESTING_LIMIT,
    canonical_json,
    canonical_json_within,
    es_number,
)


def test_canonical_json_sorts_keys_and_drops_whitespace() -> None:
    assert canonical_json({"b": [1, 2], "a": {"d": None, "c": True}}) == (
        b'{"a":{"c":true,"d":null},"b":[1,2]}'
    )


def test_canonical_json_is_utf8_not_ascii_escaped() -> None:
    assert canonical_json("é🦀") == '"é🦀"'.encode()


def test_canonical_json_writes_numbers_as_ecmascript_does() -> None:
    assert canonical_json([0.1, 1e16, -0.0, 1.0, 1e21, 1e-7, 1e-6]) == (
        b"[0.1,10000000000000000,0,1,1e+21,1e-7,0.000001]"
    )


def test_an_int_and_the_equal_float_are_the_same_json() -> None:
    assert canonical_json({"n": 1}) == canonical_json({"n": 1.0})
    assert canonical_json(2**53 - 1) == canonical_json(float(2**53 - 1))


@pytest.mark.parametrize("value", [2**53, -(2**53), 2**64 + 1, 10**400])
def test_canonical_json_refuses_integers_beyond_the_exact_double_range(value: int) -> None:
    with pytest.raises(CanonicalJsonError, match="as a string"):
        canonical_json([value])


# RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text.
RFC8785_NUMBERS = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


@pytest.mark.parametrize(("bits", "text"), RFC8785_NUMBERS)
def test_rfc8785_appendix_b_numbers(bits: str, text: str) -> None:
    (value,) = struct.unpack(">d", bytes.fromhex(bits))
    assert es_number(value) == text


def test_keys_sort_by_utf16_code_units_not_code_points() -> None:
    # U+1F600 is the surrogate pair D83D DE00: before U+FFFF in UTF-16, after it in code points.
    assert canonical_json({"\uffff": 1, "\U0001f600": 2, "a": 3}) == (
        '{"a":3,"\U0001f600":2,"\uffff":1}'.encode()
    )


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


def _nested(depth: int, leaf: Any) -> Any:
    value = leaf  # a container itself: depth counts it
    for i in range(depth - 1):
        value = {"a": value} if i % 2 else [value, 1]
    return value


@pytest.mark.parametrize("leaf", [{}, [], {"k": "v"}, [1, "x"], ()])
def test_depth_counts_every_object_and_array_once(leaf: Any) -> None:
    at_limit = canonical_json_within(_nested(3, leaf), 3)
    assert at_limit == canonical_json(_nested(3, leaf))
    assert canonical_json_within(_nested(4, leaf), 3) is None
    assert canonical_json_within([1, _nested(3, leaf)], 3) is None  # the outer array counts
    assert canonical_json_within("scalar", 0) == b'"scalar"'


def test_canonical_json_takes_nesting_up_to_its_limit() -> None:
    value = _nested(NESTING_LIMIT, [])
    assert canonical_json(value).startswith(b'[{"a":[{"a":')
    with pytest.raises(CanonicalJsonError, match="nested too deeply"):
        canonical_json([value])


def test_bool_is_not_an_int() -> None:
    assert canonical_json([True, 1]) == b"[true,1]"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_canonical_json_round_trips_through_json_and_is_idempotent(value: Any) -> None:
    data = canonical_json(value)
    # Read back as doubles, as JCS means them: an integral double >= 2**53 prints without an
    # exponent, and Python would read it as an int beyond the exact range.
    assert canonical_json(json.loads(data, parse_int=float)) == data


@given(json_values)
def test_canonical_json_matches_the_reference_rfc8785_implementation(value: Any) -> None:
    assert canonical_json(value) == rfc8785.dumps(value)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_double_is_written_as_the_reference_writes_it(value: float) -> None:
    assert canonical_json(value) == rfc8785.dumps(value)
