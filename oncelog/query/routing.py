"""Any instance answers for any channel: forward to the partition's owner, or gather.

- ``/v1/status`` and ``/v1/side-effects`` go to the member that owns the channel's
  partition of the requests topic (:func:`oncelog.identity.partitioner.partition_for`):
  it holds the channel's current states. This instance answers itself when it is
  the owner.
- ``/v1/timeline``, ``/v1/history`` and ``/v1/duplicates`` gather every member's
  answer and merge them (:mod:`oncelog.query.merge`): after partitions moved, rows
  of one channel or operation can sit in several members' files.
- ``/v1/positions`` gathers too, and keeps each partition's position from its owner.

A forwarded request carries ``Oncelog-Forwarded-By: <projector id>`` and is always
answered locally, so a query takes at most one hop: no loop is possible. The
forwarding instance sends its own bearer token, only in the ``Authorization``
header and only to members of the group; nothing of the caller's request but its
path and query string goes along. Each member gets ``timeout_s``; a member that
does not answer in time is named in a 503 (``owner_unavailable``).
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol, cast, get_args

import httpx
from fastapi import Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, SecretStr
from starlette.concurrency import run_in_threadpool

from oncelog.errors import NoOwnerError, OwnerUnavailableError
from oncelog.identity.partitioner import partition_for
from oncelog.query import merge
from oncelog.query.models import Page, Positions, SuspectedDuplicate, TimelineEntry, Version
from oncelog.query.owners import Member, OwnerView

FORWARDED_BY: Final = "oncelog-forwarded-by"
"""The header that marks a forwarded request (value: the sender's projector id)."""

CallNext = Callable[[Request], Awaitable[Response]]
Kind = Literal["status", "side-effects", "timeline", "history", "duplicates", "positions"]
_KINDS: Final = frozenset(get_args(Kind))
_TO_OWNER: Final = frozenset({"status", "side-effects"})
_REDACTABLE: Final = frozenset({"status", "history"})


@dataclass(frozen=True)
class Route:
    """How one API path is answered: by the channel's owner, or gathered from all."""

    kind: Kind
    channel: str | None = None

    @property
    def to_owner(self) -> bool:
        """True for the per-channel questions the partition's owner answers."""
        return self.kind in _TO_OWNER


def route_of(raw_path: str) -> Route | None:
    """The route of a (still percent-encoded) request path; None: answered locally."""
    parts = [urllib.parse.unquote(p) for p in raw_path.split("/")]
    if len(parts) < 3 or parts[:2] != ["", "v1"] or parts[2] not in _KINDS:
        return None
    kind = cast(Kind, parts[2])
    if kind in _TO_OWNER:
        return Route(kind, parts[3]) if len(parts) > 3 and parts[3] else None
    return Route(kind)


class OwnerSource(Protocol):
    """The group's owner view (:class:`oncelog.query.owners.GroupOwners`); blocking calls."""

    def view(self) -> OwnerView: ...
    def refreshed(self) -> OwnerView: ...


class _MemberDownError(Exception):
    """A member did not answer usefully (timeout, refused, no API); internal."""

    def __init__(self, member: Member, why: str) -> None:
        super().__init__(f"{member.describe()}: {why}")
        self.member = member


@dataclass(frozen=True)
class _Answer:
    status: int
    body: bytes


class QueryRouter:
    """The routing middleware's logic; one per API, shared by its requests."""

    def __init__(
        self,
        owners: OwnerSource,
        projector_id: str,
        *,
        token: SecretStr | None,
        timeout_s: float,
        redact_results: bool = False,
    ) -> None:
        self._owners = owners
        self._id = projector_id
        self._timeout_s = timeout_s
        self._redact = redact_results
        self._headers = {"Accept": "application/json", FORWARDED_BY: projector_id}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token.get_secret_value()}"
        self._http: httpx.AsyncClient | None = None

    async def dispatch(self, request: Request, call_next: CallNext) -> Response:
        """Answer locally, forward to the owner, or gather; raises ``LedgerError``s."""
        route = route_of(request.scope.get("raw_path", b"").decode("latin-1"))
        if route is None or request.method != "GET" or FORWARDED_BY in request.headers:
            return await call_next(request)
        if route.to_owner:
            assert route.channel is not None
            answer = await self._from_owner(request, call_next, route.channel)
        else:
            answer = await self._gathered(request, call_next, route.kind)
        return self._response(route.kind, answer)

    async def aclose(self) -> None:
        """Close the HTTP client (at the API's shutdown)."""
        if self._http is not None:
            await self._http.aclose()

    # --- one owner -----------------------------------------------------------------

    async def _from_owner(self, request: Request, call_next: CallNext, channel: str) -> _Answer:
        view = await run_in_threadpool(self._owners.view)
        partition = partition_for(channel, view.partitions)
        owner = view.owner_of(partition)
        if owner is None:
            view = await run_in_threadpool(self._owners.refreshed)
            owner = view.owner_of(partition)
        if owner is None:
            raise NoOwnerError(
                f"no member of the projector group owns partition {partition} (channel "
                f"{channel!r}) yet: the group is rebalancing or no projector runs; retry"
            )
        try:
            return await self._ask(owner, request, call_next)
        except _MemberDownError as down:
            # The view may be stale (a member left and its partitions moved): look again, once.
            successor = (await run_in_threadpool(self._owners.refreshed)).owner_of(partition)
            if successor is None or successor == owner:
                raise self._unavailable(partition, down) from down
        try:
            return await self._ask(successor, request, call_next)
        except _MemberDownError as down:
            raise self._unavailable(partition, down) from down

    def _unavailable(self, partition: int, down: _MemberDownError) -> OwnerUnavailableError:
        return OwnerUnavailableError(
            f"partition {partition} is owned by {down.member.projector_id} "
            f"({down.member.url}), which gave no answer (timeout {self._timeout_s} s): {down}"
        )

    async def _ask(self, member: Member, request: Request, call_next: CallNext) -> _Answer:
        if member.projector_id == self._id:
            return await _local(request, call_next)
        return await self._fetch(member, request)

    # --- every member --------------------------------------------------------------

    async def _gathered(self, request: Request, call_next: CallNext, kind: Kind) -> _Answer:
        view = await run_in_threadpool(self._owners.view)
        others = [m for m in view.members if m.projector_id != self._id]
        local, remote = await asyncio.gather(
            _local(request, call_next),
            asyncio.gather(*(self._fetch_or_down(m, request) for m in others)),
        )
        if local.status != 200:
            return local  # the question itself is wrong (400): every member says so
        down = [r for r in remote if isinstance(r, _MemberDownError)]
        if down:
            view = await self._still_members(view, down)
        answers = {self._id: local.body}
        for member, result in zip(others, remote, strict=True):
            if isinstance(result, _Answer):
                answers[member.projector_id] = result.body
        return _Answer(200, _merged(kind, answers, view).model_dump_json().encode())

    async def _still_members(self, view: OwnerView, down: Sequence[_MemberDownError]) -> OwnerView:
        """The fresh view, once every member that did not answer has left the group.

        A member that is gone is not asked (its file cannot be); one still in the
        group may hold rows nobody else has: then the answer is a 503 naming it.
        """
        fresh = await run_in_threadpool(self._owners.refreshed)
        present = {m.projector_id for m in fresh.members}
        missing = [d for d in down if d.member.projector_id in present]
        if missing:
            names = "; ".join(str(d) for d in missing)
            raise OwnerUnavailableError(
                f"{len(missing)} member(s) of the projector group did not answer within "
                f"{self._timeout_s} s, so the merged answer would be incomplete: {names}"
            )
        return fresh

    # --- HTTP ------------------------------------------------------------------------

    async def _fetch_or_down(self, member: Member, request: Request) -> _Answer | _MemberDownError:
        """A gathered member's page, or why it has none (a gather needs every answer)."""
        try:
            answer = await self._fetch(member, request)
        except _MemberDownError as down:
            return down
        if answer.status != 200:
            return _MemberDownError(member, f"answered HTTP {answer.status}: {answer.body[:300]!r}")
        return answer

    async def _fetch(self, member: Member, request: Request) -> _Answer:
        """GET the same path and query string from ``member``, within the timeout."""
        if member.url is None:
            raise _MemberDownError(member, "it serves no query API")
        url = f"{member.url.rstrip('/')}{request.scope.get('raw_path', b'').decode('latin-1')}"
        query = request.scope.get("query_string", b"").decode("latin-1")
        try:
            response = await asyncio.wait_for(
                self._client().get(f"{url}?{query}" if query else url, headers=self._headers),
                self._timeout_s,
            )
        except (TimeoutError, httpx.HTTPError) as exc:
            raise _MemberDownError(member, f"{type(exc).__name__}: {exc}".rstrip(": ")) from exc
        if response.status_code in (401, 403):
            why = "it refused this instance's bearer token (set one ONCELOG_HTTP_TOKEN for all)"
            raise _MemberDownError(member, why)
        return _Answer(response.status_code, response.content)

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self._timeout_s, follow_redirects=False)
        return self._http

    def _response(self, kind: Kind, answer: _Answer) -> Response:
        if not (self._redact and kind in _REDACTABLE and answer.status == 200):
            return Response(answer.body, answer.status, media_type="application/json")
        # A member without --redact-results may have answered: this instance's rule holds.
        return JSONResponse(_redacted(kind, json.loads(answer.body)))


async def _local(request: Request, call_next: CallNext) -> _Answer:
    """This instance's own answer (the routes below the middleware), as bytes."""
    response = await call_next(request)
    body: AsyncIterator[bytes] = response.body_iterator  # type: ignore[attr-defined]
    return _Answer(response.status_code, b"".join([chunk async for chunk in body]))


def _pages(model: type[BaseModel], answers: Mapping[str, bytes]) -> list[Any]:
    """Each member's page, in projector-id order (the merge keeps the first of equal rows)."""
    return [Page[model].model_validate_json(answers[m]) for m in sorted(answers)]  # type: ignore[valid-type]


def _merged(kind: Kind, answers: Mapping[str, bytes], view: OwnerView) -> BaseModel:
    if kind == "timeline":
        return merge.merge_timeline(_pages(TimelineEntry, answers))
    if kind == "history":
        return merge.merge_history(_pages(Version, answers))
    if kind == "duplicates":
        return merge.merge_duplicates(_pages(SuspectedDuplicate, answers))
    positions = {m: Positions.model_validate_json(body) for m, body in answers.items()}
    owners = {p: member.projector_id for p, member in view.owners.items()}
    return merge.merge_positions(positions, owners)


def _redacted(kind: Kind, body: dict[str, Any]) -> dict[str, Any]:
    blank = {"result": None, "result_redacted": True}
    if kind == "status":
        return {**body, **blank}
    return {**body, "items": [{**item, **blank} for item in body["items"]]}
