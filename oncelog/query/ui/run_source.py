"""A run's data, read through the API's own ``/v1`` routes, in process.

The page asks the same app it is served by (an ASGI transport: no socket), so it
sees exactly what the API answers: the same bearer check, the same redaction,
and in a group the same routing: ``/v1/timeline`` and ``/v1/history`` are
gathered from every member and merged, ``/v1/status`` goes to the channel's
owner (:mod:`oncelog.query.routing`). The page is thereby correct through any
member, with no routing of its own.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import httpx
from pydantic import SecretStr
from starlette.types import ASGIApp

from oncelog.query.models import Page, StepStatus, TimelineEntry, Version
from oncelog.query.source import ledger_error_of, path_segment
from oncelog.query.ui.timeline_model import AsOf, RunData

MAX_STEPS: Final = 300
"""The most operations one page reads the history of; more are left out (and said so)."""
_CONCURRENCY: Final = 8
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_BASE: Final = "http://oncelog-ui.internal"  # never resolved: the transport is the app itself


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


class ApiRunSource:
    """Reads one run's requests, versions and as-of statuses from the app's ``/v1`` API."""

    def __init__(self, app: ASGIApp, token: SecretStr | None, limit: int) -> None:
        self._app = app
        self._limit = limit
        self._headers = {"Accept": "application/json"}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token.get_secret_value()}"

    async def run(self, channel: str, as_of: int | datetime | None) -> RunData:
        """Everything :func:`oncelog.query.ui.timeline_model.build_view` needs for ``channel``."""
        transport = httpx.ASGITransport(app=self._app)
        async with httpx.AsyncClient(transport=transport, base_url=_BASE) as http:
            page = await self._get(http, f"/v1/timeline/{path_segment(channel)}", limit=self._limit)
            requests = [TimelineEntry.model_validate(r) for r in page["items"]]
            ops = list(dict.fromkeys(r.operation_id for r in requests))
            keys = list(dict.fromkeys(r.key_name for r in requests))
            gate = asyncio.Semaphore(_CONCURRENCY)
            histories = await asyncio.gather(
                *(self._history(http, gate, op) for op in ops[:MAX_STEPS])
            )
            statuses = None
            if as_of is not None:
                found = await asyncio.gather(
                    *(self._status(http, gate, channel, key, as_of) for key in keys[:MAX_STEPS])
                )
                statuses = dict(zip(keys, found, strict=False))
        return RunData(
            channel=channel,
            requests=requests,
            versions=dict(zip(ops, histories, strict=False)),
            truncated=bool(page["truncated"]) or len(ops) > MAX_STEPS,
            as_of=None if as_of is None else as_of_point(as_of),
            statuses=statuses,
        )

    async def _history(
        self, http: httpx.AsyncClient, gate: asyncio.Semaphore, op: str
    ) -> list[Version]:
        async with gate:
            page = await self._get(http, f"/v1/history/{path_segment(op)}", limit=self._limit)
        return [Version.model_validate(v) for v in Page[Any].model_validate(page).items]

    async def _status(
        self,
        http: httpx.AsyncClient,
        gate: asyncio.Semaphore,
        channel: str,
        key: str,
        as_of: int | datetime,
    ) -> StepStatus:
        path = f"/v1/status/{path_segment(channel)}/{path_segment(key)}"
        async with gate:
            return StepStatus.model_validate(await self._get(http, path, as_of=as_of_param(as_of)))

    async def _get(self, http: httpx.AsyncClient, path: str, **params: Any) -> Any:
        response = await http.get(path, params=params, headers=self._headers)
        if response.is_error:
            raise ledger_error_of(response)
        return response.json()
