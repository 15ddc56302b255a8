"""The result classes' fast paths equal their references: ``json.loads`` and the dataclass
``__init__``."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oncelog.producer.results import Claim, ClaimStatus, Execution, built, json_value
from tests.budget import examples

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
ENCODINGS = st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32"])


def _outcome(parse: Any, data: bytes) -> tuple[str, object]:
    try:
        return "value", parse(data)
    except Exception as exc:  # the same error, with the same message
        return type(exc).__name__, str(exc)


@settings(max_examples=examples(2_000), deadline=None)
@given(value=JSON, encoding=ENCODINGS)
def test_json_value_equals_json_loads_on_json_in_any_encoding(value: Any, encoding: str) -> None:
    data = json.dumps(value, ensure_ascii=False).encode(encoding, "surrogatepass")
    assert _outcome(json_value, data) == _outcome(json.loads, data)


@settings(max_examples=examples(2_000), deadline=None)
@given(data=st.binary(max_size=12) | st.binary(max_size=3).map(lambda b: b + b"[1]"))
def test_json_value_equals_json_loads_on_any_bytes(data: bytes) -> None:
    assert _outcome(json_value, data) == _outcome(json.loads, data)


@pytest.mark.parametrize("cls", [Execution, Claim])
def test_built_equals_the_dataclass_init(cls: type[Any]) -> None:
    values = tuple(f"v{i}" for i, _ in enumerate(fields(cls)))
    made, reference = built(cls, values), cls(*values)
    assert made == reference
    assert repr(made) == repr(reference)
    assert hash(made) == hash(reference)
    assert type(made) is cls
    with pytest.raises(AttributeError):  # still frozen
        made.status = ClaimStatus.CLAIMED


def test_built_needs_every_field() -> None:
    with pytest.raises(ValueError, match="zip"):
        built(Claim, ("claimed",))
