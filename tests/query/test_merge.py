"""Merging gathered pages: exact paging, dedup, log order, recomputed history ends. No I/O."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from oncelog.query.merge import merge_history, merge_positions, merge_timeline
from oncelog.query.models import Page, Positions, TimelineEntry, Version


def _entry(partition: int, offset: int) -> TimelineEntry:
    return TimelineEntry(
        partition=partition, offset=offset, request_id=f"r{partition}-{offset}", operation_id="op",
        key_name="k", kind="claim", outcome="granted", changed=True, version=1, epoch=1,
        worker_id="w", effect="pure", log_time_ms=offset, duplicate_effect_suspected=False,
        retried=False,
    )  # fmt: skip


def _page(rows: list[TimelineEntry], limit: int) -> Page[TimelineEntry]:
    """What one member answers: its first ``limit`` rows in log order."""
    ordered = sorted(rows, key=lambda r: (r.partition, r.offset))
    return Page[TimelineEntry](items=ordered[:limit], limit=limit, truncated=len(ordered) > limit)


positions = st.sets(st.tuples(st.integers(0, 3), st.integers(0, 40)), min_size=0, max_size=30)


@given(rows=positions, holders=st.lists(st.integers(1, 7), min_size=30, max_size=30),
       limit=st.integers(0, 12))  # fmt: skip
def test_a_merged_timeline_is_the_first_page_of_everything_the_members_hold(
    rows: set[tuple[int, int]], holders: list[int], limit: int
) -> None:
    # Each row sits with one to three members (bit i of its holder mask: member i).
    members: list[list[TimelineEntry]] = [[], [], []]
    for (partition, offset), mask in zip(sorted(rows), holders, strict=False):
        for i in range(3):
            if mask & (1 << i):
                members[i].append(_entry(partition, offset))
    merged = merge_timeline([_page(rows_of, limit) for rows_of in members])
    expected = sorted(rows)
    assert [(e.partition, e.offset) for e in merged.items] == expected[:limit]
    assert merged.truncated == (len(expected) > limit)
    assert merged.limit == limit


def _versions(starts: list[int], held: list[int]) -> list[Version]:
    """A member's history page rows: the versions it holds, each ending where ITS next starts."""
    mine = [v for v in range(1, len(starts) + 1) if v in held]
    return [
        Version(
            operation_id="op",
            version=v,
            status="CLAIMED",
            outcome="granted",
            request_id=f"r{v}",
            epoch=1,
            worker_id="w",
            token_fp="fp",
            effect="pure",
            valid_from_offset=starts[v - 1],
            valid_to_offset=starts[mine[i + 1] - 1] if i + 1 < len(mine) else None,
            log_time_ms=starts[v - 1],
        )
        for i, v in enumerate(mine)
    ]


@given(
    gaps=st.lists(st.integers(1, 5), min_size=1, max_size=12),
    masks=st.lists(st.integers(1, 7), min_size=12, max_size=12),
    limit=st.integers(1, 14),
)
def test_a_merged_history_ends_each_version_where_the_next_one_starts(
    gaps: list[int], masks: list[int], limit: int
) -> None:
    starts = [sum(gaps[: i + 1]) for i in range(len(gaps))]
    held = [[v for v in range(1, len(starts) + 1) if masks[v - 1] & (1 << i)] for i in range(3)]
    pages = []
    for mine in held:
        rows = _versions(starts, mine)
        pages.append(Page[Version](items=rows[:limit], limit=limit, truncated=len(rows) > limit))
    merged = merge_history(pages)
    n = min(limit, len(starts))
    assert [v.version for v in merged.items] == list(range(1, n + 1))
    ends = [v.valid_to_offset for v in merged.items]
    assert ends == [starts[v] if v < len(starts) else None for v in range(1, n + 1)]
    assert merged.truncated == (len(starts) > limit)


def test_positions_come_from_each_partitions_owner_only() -> None:
    answers = {
        "p0": Positions(next_offsets={0: 10, 1: 3}),  # p0 folded 1 once; p1 owns it now
        "p1": Positions(next_offsets={1: 7}),
    }
    merged = merge_positions(answers, owners={0: "p0", 1: "p1", 2: "p1"})
    assert merged.next_offsets == {0: 10, 1: 7}  # 2: p1 is restoring it, not caught up


def test_equal_rows_from_two_members_appear_once() -> None:
    row = _entry(1, 5)
    merged = merge_timeline([_page([row], 10), _page([row, _entry(1, 6)], 10)])
    assert [(e.partition, e.offset) for e in merged.items] == [(1, 5), (1, 6)]
    assert not merged.truncated
