"""Merge the answers several members give to one gathered query. Pure: no I/O.

Each member answers from its own DuckDB file. The rows of one channel all live in
one partition, but after partitions move (a restore from the executions topic
brings back current states, not the requests folded elsewhere) a channel's
timeline, an operation's history and the suspected duplicates can be spread
over the files of several members. Folding is deterministic, so two members
holding the same row hold identical rows: the merge keeps one per identity and
orders them as the single-instance query does.

Paging stays exact: every member answers with its first ``limit`` rows, so any
row among the first ``limit`` of all the members' rows together is in its
holder's page; the merged page is the first ``limit`` of what came back, and it
is ``truncated`` when a member's page was or when more than ``limit`` came back.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, TypeVar

from oncelog.query.models import (
    Page,
    PendingApproval,
    Positions,
    SuspectedDuplicate,
    TimelineEntry,
    Version,
)

T = TypeVar("T")


def merge_pages(
    pages: Sequence[Page[T]], identity: Callable[[T], Hashable], order: Callable[[T], Any]
) -> Page[T]:
    """One page from several members' pages of the same query (same limit asked).

    Rows are deduplicated by ``identity`` (the first page listing one wins: pass the
    pages in a fixed member order) and sorted by ``order``.
    """
    limit = min((p.limit for p in pages), default=0)
    rows: dict[Hashable, T] = {}
    for page in pages:
        for item in page.items:
            rows.setdefault(identity(item), item)
    ordered = sorted(rows.values(), key=order)
    truncated = any(p.truncated for p in pages) or len(ordered) > limit
    return Page[T](items=ordered[:limit], limit=limit, truncated=truncated)


def _at(row: TimelineEntry | SuspectedDuplicate) -> tuple[int, int]:
    return row.partition, row.offset


def merge_timeline(pages: Sequence[Page[TimelineEntry]]) -> Page[TimelineEntry]:
    """A channel's requests in log order: (partition, offset), as one instance sorts them."""
    return merge_pages(pages, _at, _at)


def merge_duplicates(pages: Sequence[Page[SuspectedDuplicate]]) -> Page[SuspectedDuplicate]:
    """Suspected duplicates oldest first: (log time, partition, offset), as one instance."""
    return merge_pages(pages, _at, lambda d: (d.log_time_ms, d.partition, d.offset))


def merge_approvals(pages: Sequence[Page[PendingApproval]]) -> Page[PendingApproval]:
    """Pending intents oldest first: (requested at, partition, offset), as one instance."""
    return merge_pages(
        pages, lambda a: a.operation_id, lambda a: (a.requested_at_ms, a.partition, a.offset)
    )


def merge_history(pages: Sequence[Page[Version]]) -> Page[Version]:
    """An operation's versions oldest first, each valid until the next one starts.

    A member holding only some versions computed ``valid_to_offset`` from what it
    had; it is recomputed from every version any member returned.
    """
    merged = merge_pages(pages, lambda v: v.version, lambda v: v.version)
    reported = [v for p in pages for v in p.items]
    starts = {v.version: v.valid_from_offset for v in reported}
    # A member's own end is where ITS next version starts: the nearest one is right.
    ends: dict[int, int] = {}
    for v in reported:
        if v.valid_to_offset is not None:
            ends[v.version] = min(v.valid_to_offset, ends.get(v.version, v.valid_to_offset))
    items = [
        v.model_copy(update={"valid_to_offset": starts.get(v.version + 1, ends.get(v.version))})
        for v in merged.items
    ]
    return merged.model_copy(update={"items": items})


def merge_positions(answers: Mapping[str, Positions], owners: Mapping[int, str]) -> Positions:
    """Each partition's position as its owner reports it (``owners``: partition -> member id).

    Another member may still hold an old position of a partition it folded before;
    only the owner's counts. A partition whose owner has no position yet (it is
    restoring) is left out, which reads as 0: not caught up.
    """
    merged: dict[int, int] = {}
    for partition, member in sorted(owners.items()):
        answer = answers.get(member)
        if answer is not None and partition in answer.next_offsets:
            merged[partition] = answer.next_offsets[partition]
    return Positions(next_offsets=merged)
