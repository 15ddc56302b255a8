"""A run's data, read with the API's own handlers over this instance's DuckDB file.

The page calls the functions the ``/v1`` routes call (:mod:`oncelog.query.api`),
in process, with the API's caps and redaction: it sees what the API answers. In
a projector group it asks the group as the API does
(:meth:`oncelog.query.routing.QueryRouter.ask`): the timeline and the histories
are gathered from every member and merged, each as-of status comes from the
channel's owner; this instance's part is still read here, the other members'
over HTTP. The page is thereby correct through any member.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import duckdb
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from oncelog.query import api
from oncelog.query.models import Page, StepStatus, TimelineEntry, Version
from oncelog.query.routing import QueryRouter
from oncelog.query.ui.timeline_model import AsOf, RunData

MAX_STEPS: Final = 300
"""The most operations one page reads the history of; more are left out (and said so)."""
_CONCURRENCY: Final = 8
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

Read = Callable[[duckdb.DuckDBPyConnection], BaseModel]


def as_of_param(point: int | datetime) -> str:
    """The ``?as_of=`` text of an offset or a time (UTC, milliseconds)."""
    if isinstance(point, int):
        return str(point)
    return point.astimezone(UTC).isoformat(timespec="milliseconds")


def as_of_point(point: int | datetime) -> AsOf:
    """The view's :class:`AsOf` for an offset or a timezone-aware time."""
    if isinstance(point, int):
        return AsOf(offset=point)
    # Exact integer arithmetic, as the time-travel query does: floats can be off by 1 ms.
    return AsOf(time_ms=(point - _EPOCH) // timedelta(milliseconds=1))


class RunSource:
    """Reads one run's requests, versions and as-of statuses, as the ``/v1`` API answers.

    ``cursor_factory``: a fresh cursor per read (``Store.cursor``). ``limit``: the
    page cap (the API's ``max_rows``). ``redact``: leave results out, as the API
    does. ``router``: the group's, when the API routes queries (None: alone).
    """

    def __init__(
        self,
        cursor_factory: Callable[[], duckdb.DuckDBPyConnection],
        *,
        limit: int,
        redact: bool = False,
        router: QueryRouter | None = None,
    ) -> None:
        self._cursor_factory = cursor_factory
        self._limit = limit
        self._show = api.shower(redact)
        self._router = router

    async def run(self, channel: str, as_of: int | datetime | None) -> RunData:
        """Everything :func:`oncelog.query.ui.timeline_model.build_view` needs for ``channel``."""
        page = await self._timeline(channel)
        requests: list[TimelineEntry] = page.items
        ops = list(dict.fromkeys(r.operation_id for r in requests))
        keys = list(dict.fromkeys(r.key_name for r in requests))
        gate = asyncio.Semaphore(_CONCURRENCY)
        histories = await asyncio.gather(*(self._history(gate, op) for op in ops[:MAX_STEPS]))
        statuses = None
        if as_of is not None:
            found = await asyncio.gather(
                *(self._status(gate, channel, key, as_of) for key in keys[:MAX_STEPS])
            )
            statuses = dict(zip(keys, found, strict=False))
        return RunData(
            channel=channel,
            requests=requests,
            versions=dict(zip(ops, histories, strict=False)),
            truncated=page.truncated or len(ops) > MAX_STEPS,
            as_of=None if as_of is None else as_of_point(as_of),
            statuses=statuses,
        )

    async def _timeline(self, channel: str) -> Page[TimelineEntry]:
        def read(con: duckdb.DuckDBPyConnection) -> Page[TimelineEntry]:
            return api.timeline(con, self._limit, channel, self._limit)

        params = {"channel_id": channel}
        page: Page[TimelineEntry] = await self._answer(api.TIMELINE, params, self._paged, read)
        return page

    async def _history(self, gate: asyncio.Semaphore, op: str) -> list[Version]:
        def read(con: duckdb.DuckDBPyConnection) -> Page[Version]:
            return api.history(con, self._show, self._limit, op, self._limit)

        async with gate:
            page = await self._answer(api.HISTORY, {"operation_id": op}, self._paged, read)
        versions: list[Version] = page.items
        return versions

    async def _status(
        self, gate: asyncio.Semaphore, channel: str, key: str, as_of: int | datetime
    ) -> StepStatus:
        text = as_of_param(as_of)

        def read(con: duckdb.DuckDBPyConnection) -> StepStatus:
            return api.status(con, self._show, channel, key, text)

        params = {"channel_id": channel, "step_or_key": key}
        async with gate:
            status: StepStatus = await self._answer(api.STATUS, params, {"as_of": text}, read)
        return status

    @property
    def _paged(self) -> dict[str, object]:
        return {"limit": self._limit}

    async def _answer(
        self,
        route: api.ApiRoute,
        params: Mapping[str, str],
        query: Mapping[str, object],
        read: Read,
    ) -> Any:
        """This instance's answer (``read`` over a cursor of its own), or the group's."""

        async def local() -> BaseModel:
            return await run_in_threadpool(self._read, read)

        if self._router is None:
            return await local()
        return await self._router.ask(route, params, query, local)

    def _read(self, read: Read) -> BaseModel:
        con = self._cursor_factory()
        try:
            return read(con)
        finally:
            con.close()
