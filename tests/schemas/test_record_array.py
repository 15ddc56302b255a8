"""Arrays of records written from the previous version's items (``avro_write.record_array``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oncelog.schemas import avro_write
from oncelog.schemas.avro_write import NULL, IdentityMemo, record_array, write_long
from tests.budget import examples


class _Item(tuple[int, str]):
    """A record stand-in: immutable, equal by value, a new object each time."""


def _counting() -> tuple[Callable[[Any], bytes], list[Any]]:
    written: list[Any] = []

    def write(item: Any) -> bytes:
        written.append(item)
        return f"<{item[0]}:{item[1]}>".encode()

    return write, written


def _expected(items: Any, write: Callable[[Any], bytes]) -> bytes:
    if not items:
        return NULL
    return write_long(len(items)) + b"".join(write(i) for i in items) + NULL


@pytest.fixture(autouse=True)
def _cold() -> Iterator[None]:
    avro_write.clear_runs()
    yield
    avro_write.clear_runs()


def test_a_tuple_grown_by_one_writes_only_its_new_item() -> None:
    write, written = _counting()
    items: tuple[_Item, ...] = ()
    for n in range(1, 30):
        items = (*items, _Item((n, "x")))
        written.clear()
        assert record_array(items, write) == _expected(items, write)
        # the one new item, then the reference's own calls
        assert written[0] is items[-1]
        assert len(written) == 1 + n


def test_the_same_tuple_again_writes_nothing() -> None:
    write, written = _counting()
    items = (_Item((1, "a")), _Item((2, "b")))
    first = record_array(items, write)
    written.clear()
    assert record_array(items, write) == first
    assert written == []


def test_a_different_prefix_before_the_same_items_is_written_in_full() -> None:
    write, written = _counting()
    a, b, c, d, x = (_Item((i, "v")) for i in range(5))
    record_array((a, b, c), write)
    # As long as (a, b, c) plus one and ending in c, d: but it starts with x.
    grown = (x, b, c, d)
    written.clear()
    assert record_array(grown, write) == _expected(grown, write)
    assert written[:4] == [x, b, c, d]


def test_a_pruned_tuple_is_written_in_full_and_right() -> None:
    write, _ = _counting()
    a, b, c, d = (_Item((i, "v")) for i in range(4))
    record_array((a, b, c), write)
    assert record_array((b, c, d), write) == _expected((b, c, d), write)


def test_a_list_is_never_taken_from_the_memo() -> None:
    write, _ = _counting()
    items = [_Item((1, "a")), _Item((2, "b"))]
    record_array(items, write)
    items[0] = _Item((9, "z"))  # a list can change under the same identity
    assert record_array(items, write) == _expected(items, write)
    assert record_array([], write) == NULL
    assert record_array((), write) == NULL


@settings(max_examples=examples(300), deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["grow", "prune", "same", "fresh"]), st.integers(0, 3)),
        max_size=40,
    )
)
def test_any_history_of_versions_writes_what_a_plain_array_writes(
    steps: list[tuple[str, int]],
) -> None:
    write, _ = _counting()
    items: tuple[_Item, ...] = ()
    for n, (step, k) in enumerate(steps):
        if step == "grow":
            items = (*items, _Item((n, "g")))
        elif step == "prune":
            items = items[k:]
        elif step == "fresh":  # equal values, other objects
            items = tuple(_Item(tuple(i)) for i in items)
        assert record_array(items, write) == _expected(items, write)


def test_identity_memo_promotes_an_old_entry_found_again() -> None:
    memo = IdentityMemo(budget_bytes=4 * (2 * 3 + 120))  # two entries a generation
    keys = [_Item((i, "k")) for i in range(4)]
    for key in keys[:2]:
        memo.keep(key, key, b"abc")
    memo.keep(keys[2], keys[2], b"abc")  # the first two are now the old generation
    assert memo.find(keys[0]) == (keys[0], b"abc")  # found, and young again
    memo.keep(keys[3], keys[3], b"abc")  # the old generation (keys[1]) goes
    assert memo.find(keys[1]) is None
    assert memo.find(keys[0]) == (keys[0], b"abc")
