"""The query API's checkpoint routes: what a LangGraph saver reads (docs/langgraph.md).

``/v1/checkpoints/{channel_id}`` and ``/v1/checkpoint-parts/{channel_id}`` name a
thread (its id is the channel's: the thread's tool executions and its checkpoints share
a partition), so the owner of that partition answers. ``/v1/checkpoints`` (every
thread) and ``/v1/checkpoint-parts?run_id=`` gather every member; each member's rows
count only for the partitions it owns, so a file's rows of a partition folded there
before it moved never answer twice.

``after=<partition>:<offset>,...`` makes a read wait (bounded) until this process has
folded each named partition it folds up to that offset: a saver names the positions its
own writes were acknowledged at, and so reads them back.
These routes answer only on an API that does not redact results: a checkpoint's state
holds what the graph's tools returned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Final, TypedDict

import duckdb
from fastapi import Depends, Query, Request

from oncelog.errors import CheckpointsRedactedError, InvalidArgumentError, LedgerTimeoutError
from oncelog.query.checkpoints import (
    CheckpointQuery,
    list_checkpoints,
    list_parts,
    parse_cursor,
    parse_filter,
)
from oncelog.query.models import Page
from oncelog.query.owners import OwnerView
from oncelog.query.paging import Con, Limit, MaxRows, page_of
from oncelog.schemas.checkpoint_answers import CheckpointItem, CheckpointPart

#: How long a read waits for the fold to reach the position it names.
WAIT_S: Final = 30.0

Ns = Annotated[str | None, Query(description="Only this checkpoint namespace ('' the root)")]
Before = Annotated[str | None, Query(description="Only checkpoints with a smaller id")]
Filter = Annotated[str | None, Query(description="JSON object: metadata keys and their values")]
Cursor = Annotated[
    str | None, Query(description="JSON [checkpoint_id, thread_id, ns]: the page after it")
]
After = Annotated[
    str | None,
    Query(description="partition:offset,...: wait until the fold is there (own writes)"),
]


def parse_after(text: str | None) -> dict[int, int]:
    """``partition:offset,...`` as a map (``invalid_argument`` for anything else)."""
    if not text:
        return {}
    try:
        pairs = [item.split(":") for item in text.split(",")]
        return {int(p): int(o) for p, o in pairs}
    except ValueError as exc:
        raise InvalidArgumentError(
            f"after must be partition:offset pairs separated by commas, got {text!r}"
        ) from exc


def await_fold(request: Request, after: str | None, *, owner: bool) -> None:
    """Return once the fold reached ``after`` here (bounded): on every partition named when
    this instance answers as the thread's ``owner``, else on those it folds (a gathered
    read). Refused on an API that redacts results."""
    if request.app.state.redact_results or "oncelog-redact-results" in request.headers:
        raise CheckpointsRedactedError(
            "this API redacts results, and a checkpoint's state holds them: read checkpoints "
            "from an instance that does not redact (without --redact-results)"
        )
    targets = parse_after(after)
    progress = getattr(request.app.state, "checkpoint_progress", None)
    if targets and progress is not None:
        missing = progress.wait(targets, WAIT_S, mine_only=not owner)
        if missing:
            raise LedgerTimeoutError(
                f"the checkpoints topic is not folded up to {targets} within {WAIT_S} s here; "
                f"records missing per partition: {missing} (is `oncelog serve` keeping up?)"
            )


def _checkpoint_page(
    con: duckdb.DuckDBPyConnection, q: CheckpointQuery, limit: int, max_rows: int
) -> Page[CheckpointItem]:
    cap = min(limit, max_rows)
    items, more = list_checkpoints(con, q, cap)
    return Page[CheckpointItem](items=items, limit=cap, truncated=more)


@dataclass(frozen=True)
class Listing:
    """What both checkpoint listings take from the query (FastAPI fills it in)."""

    ns: Ns = None
    before: Before = None
    filter: Filter = None
    cursor: Cursor = None
    limit: Limit = 100
    after: After = None

    def page(
        self,
        request: Request,
        con: Con,
        max_rows: int,
        channel_id: str | None,
        checkpoint_id: str | None,
    ) -> Page[CheckpointItem]:
        """The page of one thread's checkpoints (``channel_id``) or of every thread's."""
        q = CheckpointQuery(
            channel_id,
            self.ns,
            checkpoint_id,
            self.before,
            parse_filter(self.filter),
            parse_cursor(self.cursor),
        )
        await_fold(request, self.after, owner=channel_id is not None)
        return _checkpoint_page(con, q, self.limit, max_rows)


def thread_checkpoints(
    request: Request,
    con: Con,
    max_rows: MaxRows,
    channel_id: str,
    *,
    listing: Annotated[Listing, Depends()],
    checkpoint_id: Annotated[str | None, Query(description="Only this checkpoint")] = None,
) -> Page[CheckpointItem]:
    """A thread's checkpoints (the thread id is the channel id), newest first."""
    return listing.page(request, con, max_rows, channel_id, checkpoint_id)


def all_checkpoints(
    request: Request, con: Con, max_rows: MaxRows, listing: Annotated[Listing, Depends()]
) -> Page[CheckpointItem]:
    """Every thread's checkpoints, newest first."""
    return listing.page(request, con, max_rows, None, None)


StartAfter = Annotated[
    str | None, Query(description="JSON [record_key, part]: the page after that row")
]
Data = Annotated[bool, Query(description="Include the values' bytes")]


def _start_after(text: str | None) -> tuple[str, int] | None:
    if text is None:
        return None
    try:
        key, part = json.loads(text)
        if isinstance(key, str) and isinstance(part, int):
            return key, part
    except (ValueError, TypeError):
        pass
    raise InvalidArgumentError(f"start_after must be JSON [record_key, part], got {text!r}")


class _PartsWhere(TypedDict, total=False):
    """Which parts a parts route lists (:func:`list_parts`'s filters)."""

    thread_id: str
    run_ids: Sequence[str]
    with_data: bool


def _parts_page(
    con: Con, where: _PartsWhere, start_after: str | None, limit: int, max_rows: int
) -> Page[CheckpointPart]:
    """One page of parts after the ``start_after`` row, the way both parts routes page."""
    first = _start_after(start_after)
    return page_of(lambda n: list_parts(con, start_after=first, limit=n, **where), limit, max_rows)


def thread_parts(
    request: Request,
    con: Con,
    max_rows: MaxRows,
    channel_id: str,
    *,
    start_after: StartAfter = None,
    data: Data = False,
    limit: Limit = 100,
    after: After = None,
) -> Page[CheckpointPart]:
    """A thread's stored parts (what deleting, pruning or copying it works from)."""
    await_fold(request, after, owner=True)
    where = _PartsWhere(thread_id=channel_id, with_data=data)
    return _parts_page(con, where, start_after, limit, max_rows)


def run_parts(
    request: Request,
    con: Con,
    max_rows: MaxRows,
    run_id: Annotated[list[str], Query(description="The runs (repeat the parameter)")],
    *,
    start_after: StartAfter = None,
    limit: Limit = 100,
    after: After = None,
) -> Page[CheckpointPart]:
    """The parts of the checkpoints the runs made, and of the writes pending on them."""
    await_fold(request, after, owner=False)
    return _parts_page(con, _PartsWhere(run_ids=run_id), start_after, limit, max_rows)


# --- how a group merges the members' answers -------------------------------------------


def _owned(answers: Mapping[str, Any], view: OwnerView) -> tuple[list[Any], int, bool]:
    """The items each member answered for partitions it owns; the page limit; truncated."""
    pages = [answers[m] for m in sorted(answers)]
    items = [
        item
        for member in sorted(answers)
        for item in answers[member].items
        if (owner := view.owner_of(item.partition)) is not None and owner.projector_id == member
    ]
    limit = min((p.limit for p in pages), default=0)
    return items, limit, any(p.truncated for p in pages)


def merge_checkpoints(answers: Mapping[str, Any], view: OwnerView) -> Page[CheckpointItem]:
    """Every member's checkpoints of the partitions it owns, newest first."""
    items, limit, truncated = _owned(answers, view)
    items.sort(key=lambda c: (c.thread_id, c.checkpoint_ns))
    items.sort(key=lambda c: c.checkpoint_id, reverse=True)  # stable: id desc, then the above
    return Page[CheckpointItem](
        items=items[:limit], limit=limit, truncated=truncated or len(items) > limit
    )


def merge_parts(answers: Mapping[str, Any], view: OwnerView) -> Page[CheckpointPart]:
    """Every member's parts of the partitions it owns, in (record_key, part) order."""
    items, limit, truncated = _owned(answers, view)
    items.sort(key=lambda p: (p.record_key, p.part))
    return Page[CheckpointPart](
        items=items[:limit], limit=limit, truncated=truncated or len(items) > limit
    )
