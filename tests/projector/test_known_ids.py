"""The filter of stored operation ids: never a missed id, a fixed size, rare false hits."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oncelog.projector.known_ids import DEFAULT_BITS, KnownIds


@given(st.lists(st.text(min_size=1, max_size=40), max_size=300), st.sampled_from([8, 64, 4096]))
def test_every_added_id_is_found_even_in_a_saturated_filter(ids: list[str], bits: int) -> None:
    known = KnownIds(bits)
    known.update(ids)
    assert all(op in known for op in ids)


def test_its_size_does_not_grow_with_the_ids_added() -> None:
    known = KnownIds(1 << 16)
    before = known.size_bytes
    known.update(str(uuid.uuid4()) for _ in range(50_000))
    assert known.size_bytes == before == (1 << 16) // 8


def test_new_ids_are_rarely_taken_for_stored_ones() -> None:
    known = KnownIds(1 << 20)
    known.update(str(uuid.uuid4()) for _ in range(10_000))
    fresh = [str(uuid.uuid4()) for _ in range(10_000)]
    # Expected about 1e-8 at this fill; a broken filter (all or half "maybe") is far above.
    assert sum(op in known for op in fresh) <= 10


def test_an_empty_filter_holds_nothing() -> None:
    known = KnownIds()
    assert known.size_bytes == DEFAULT_BITS // 8
    assert "op-1" not in known
    assert 1 not in known


@pytest.mark.parametrize("bits", [0, 4, 100, 1000])
def test_a_size_that_is_not_a_power_of_two_is_refused(bits: int) -> None:
    with pytest.raises(ValueError, match="power of two"):
        KnownIds(bits)
