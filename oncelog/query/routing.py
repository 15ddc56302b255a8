"""Any instance answers for any channel: forward to the partition's owner, or gather.

Who answers a request is the ``answerer`` of its entry in the route table
(:data:`oncelog.query.api.ROUTES`), found by Starlette's own route matching:

- ``"owner"`` routes (``/v1/status``, ``/v1/side-effects``) go to the member that
  owns the channel's partition of the requests topic
  (:func:`oncelog.identity.partitioner.partition_for`): it holds the channel's
  current states. This instance answers itself when it is the owner. The owner's
  answer passes through as it came: its status, content type and body, streamed.
- ``"every"`` routes (``/v1/timeline``, ``/v1/history``, ``/v1/duplicates``) gather
  every member's answer and merge them (:mod:`oncelog.query.merge`): after
  partitions moved, rows of one channel or operation can sit in several members'
  files. ``/v1/positions`` gathers too, and keeps each partition's position from
  its owner.

A forwarded request carries ``Oncelog-Forwarded-By: <projector id>`` and is always
answered locally, so a query takes at most one hop: no loop is possible. A gathered one
also names the partitions the gathering instance's view gives the member
(``Oncelog-Owned-Partitions``): the merge keeps each partition's rows from that member
only, so it answers once it folds them (bounded; a member learns its assignment a moment
after the coordinator states it). When a member, or this instance, does not fold what
the view gives it, the view was stale: the gather is asked again with a fresh view, and
a ``no_owner`` 503 (retry) says so when that does not settle it either. The
forwarding instance sends its own bearer token, only in the ``Authorization``
header and only to members of the group; nothing of the caller's request but its
path and query string goes along. Each member gets ``timeout_s``; a member that
does not answer in time is named in a 503 (``owner_unavailable``).

With ``redact_results`` this instance asks every member to leave results out
(``Oncelog-Redact-Results``). An owner's answer that does not say it did
(``Oncelog-Results-Redacted``: a member of another version) is read and redacted
here, and so is every merged answer: this instance's rule holds whoever answered.

The UI builds its pages in process through :meth:`QueryRouter.ask`: this
instance's part comes from the query functions, the other members' over HTTP.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

import httpx
from fastapi import Request, Response
from pydantic import BaseModel, SecretStr, TypeAdapter
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse
from starlette.routing import Match, Route

from oncelog.errors import NoOwnerError, OwnerUnavailableError
from oncelog.identity.partitioner import partition_for
from oncelog.query.api import (
    FORWARDED_BY,
    OWNED,
    REDACT,
    REDACTED,
    ROUTES,
    ApiRoute,
    redacted,
)
from oncelog.query.member_client import MemberClient, MemberDownError
from oncelog.query.owners import Member, OwnerView
from oncelog.schemas import read_api

__all__ = ["FORWARDED_BY", "OwnerSource", "QueryRouter", "Question"]

CallNext = Callable[[Request], Awaitable[Response]]
T = TypeVar("T")
# What of an owner's answer is passed on: its body is exactly the bytes these describe.
_PASSED_HEADERS: Final = ("content-type", "content-length", REDACTED)
# Views a gather is asked with: the cached one, then fresh ones while members' folds lag it.
_GATHER_VIEWS: Final = 3


@dataclass(frozen=True)
class Question:
    """A request the group answers: its route, the path and query string a member is
    asked (still percent-encoded), and the channel it names (``"owner"`` routes)."""

    route: ApiRoute
    target: str
    channel: str | None = None


class OwnerSource(Protocol):
    """The group's owner view (:class:`oncelog.query.owners.GroupOwners`); blocking calls."""

    def view(self) -> OwnerView: ...
    def refreshed(self) -> OwnerView: ...


class HeldWaiter(Protocol):
    """What this process folds (:class:`oncelog.projector.checkpoints.FoldProgress`)."""

    def await_held(self, partitions: Collection[int], timeout_s: float) -> frozenset[int]:
        """Wait (bounded) until each of ``partitions`` is folded here; those still not."""
        ...


@dataclass(frozen=True)
class _Stale:
    """A gather's answer when its view was stale: the view to ask with next, when known."""

    fresh: OwnerView | None = None


class FoldGate:
    """Whether this process folds the partitions a gather's view gives it, waiting at most
    ``wait_s``; ``held`` None: a query server of no projector (it never waits)."""

    def __init__(self, held: HeldWaiter | None, projector_id: str, wait_s: float) -> None:
        self._held, self._id, self._wait_s = held, projector_id, wait_s

    async def unfolded(self, partitions: Collection[int]) -> frozenset[int]:
        """Those of ``partitions`` this process does not fold within the wait."""
        if self._held is None or not partitions or not self._held.await_held(partitions, 0):
            return frozenset()
        return await run_in_threadpool(self._held.await_held, partitions, self._wait_s)

    async def require(self, partitions: Collection[int]) -> None:
        """Return once this process folds ``partitions`` (a gather's member); else raise
        ``NoOwnerError`` (the asking instance asks again with a fresh view)."""
        missing = await self.unfolded(partitions)
        if missing:
            raise NoOwnerError(
                f"{self._id} does not fold partition(s) {sorted(missing)} that the asking "
                "instance's view of the projector group gives it (a rebalance in progress, "
                "or that view is stale); retry"
            )


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
        held: HeldWaiter | None = None,
    ) -> None:
        self._owners = owners
        self._id = projector_id
        self._timeout_s = timeout_s
        self._gate = FoldGate(held, projector_id, timeout_s / 2)
        self._redact = redact_results
        headers = {FORWARDED_BY: projector_id}
        if redact_results:
            headers[REDACT] = "true"
        self._members = MemberClient(token, timeout_s, headers)
        self._matchers = [
            (Route(r.path, r.endpoint, methods=["GET"]), r) for r in ROUTES if r.answerer != "here"
        ]
        self._readers = {r.path: TypeAdapter[Any](r.model) for _, r in self._matchers}

    def question(self, request: Request) -> Question | None:
        """What the group is asked, None when this instance answers alone (a forwarded
        request, a method but GET, a path of no ``"owner"`` or ``"every"`` route)."""
        if request.method != "GET" or FORWARDED_BY in request.headers:
            return None
        for matcher, route in self._matchers:
            match, child = matcher.matches(request.scope)
            if match is Match.FULL:
                path = request.scope.get("raw_path") or request.url.path.encode()
                query = request.scope.get("query_string", b"")
                target = (path + b"?" + query if query else path).decode("latin-1")
                return Question(route, target, child["path_params"].get("channel_id"))
        return None

    async def dispatch(self, request: Request, call_next: CallNext) -> Response:
        """Answer locally, forward to the owner, or gather; raises ``LedgerError``s."""
        if FORWARDED_BY in request.headers and OWNED in request.headers:
            await self._gate.require(_partitions(request.headers[OWNED]))
        question = self.question(request)
        if question is None:
            return await call_next(request)
        if question.route.answerer == "owner":
            return await self._owner_answer(question, request, call_next)
        merged = await self._gathered(question, lambda: self._local(question, request, call_next))
        return merged if isinstance(merged, Response) else self._json(question.route, merged)

    async def ask(
        self,
        route: ApiRoute,
        params: Mapping[str, str],
        query: Mapping[str, object],
        local: Callable[[], Awaitable[BaseModel]],
    ) -> Any:
        """The group's answer to ``route`` as a model, for a page built in process.

        ``params`` fill the route's path, ``query`` its query string (None values are
        left out); ``local`` is this instance's own answer (the query functions).
        Raises the ``LedgerError`` of a member's error answer.
        """
        path = read_api.path(route.path, **params)
        present = {k: v for k, v in query.items() if v is not None}
        target = f"{path}?{urllib.parse.urlencode(present)}" if present else path
        question = Question(route, target, params.get("channel_id"))
        if route.answerer == "every":
            return await self._gathered(question, local)

        async def ask_member(member: Member) -> Any:
            if member.projector_id == self._id:
                return await local()
            response = await self._members.fetch(member, question.target)
            if response.is_error:
                asked = f"GET {member.url}{question.target}"
                raise read_api.error_of(response.status_code, response.content, asked)
            return self._read(route, response)

        assert question.channel is not None
        return await self._from_owner(question.channel, ask_member)

    async def aclose(self) -> None:
        """Close the HTTP client (at the API's shutdown)."""
        await self._members.aclose()

    # --- one owner -----------------------------------------------------------------

    async def _owner_answer(
        self, question: Question, request: Request, call_next: CallNext
    ) -> Response:
        async def ask_member(member: Member) -> Response:
            if member.projector_id == self._id:
                return await call_next(request)
            return await self._relay(member, question)

        assert question.channel is not None
        return await self._from_owner(question.channel, ask_member)

    async def _from_owner(self, channel: str, ask: Callable[[Member], Awaitable[T]]) -> T:
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
            return await ask(owner)
        except MemberDownError as down:
            # The view may be stale (a member left and its partitions moved): look again, once.
            successor = (await run_in_threadpool(self._owners.refreshed)).owner_of(partition)
            if successor is None or successor == owner:
                raise self._unavailable(partition, down) from down
        try:
            return await ask(successor)
        except MemberDownError as down:
            raise self._unavailable(partition, down) from down

    def _unavailable(self, partition: int, down: MemberDownError) -> OwnerUnavailableError:
        return OwnerUnavailableError(
            f"partition {partition} is owned by {down.member.projector_id} "
            f"({down.member.url}), which gave no answer (timeout {self._timeout_s} s): {down}"
        )

    async def _relay(self, member: Member, question: Question) -> Response:
        """The member's answer as it came: its status, content type and body, streamed."""
        response = await self._members.within(member, self._members.open(member, question.target))
        if response.status_code == 200 and self._must_redact(question.route, response):
            try:
                await self._members.within(member, response.aread())
            finally:
                await response.aclose()
            return self._json(question.route, self._read(question.route, response))
        headers = {k: response.headers[k] for k in _PASSED_HEADERS if k in response.headers}
        return StreamingResponse(
            response.aiter_raw(),
            response.status_code,
            headers=headers,
            background=BackgroundTask(response.aclose),
        )

    # --- every member --------------------------------------------------------------

    async def _gathered(
        self, question: Question, local: Callable[[], Awaitable[BaseModel | Response]]
    ) -> BaseModel | Response:
        """The members' answers merged, or this instance's own answer when it is an error."""
        view = await run_in_threadpool(self._owners.view)
        answers = await self._gather(question, local, view)
        for _ in range(_GATHER_VIEWS - 1):
            if not isinstance(answers, _Stale):
                break
            fresh = answers.fresh
            view = fresh if fresh is not None else await run_in_threadpool(self._owners.refreshed)
            answers = await self._gather(question, local, view)
        if isinstance(answers, _Stale):
            raise NoOwnerError(
                "the projector group is rebalancing: a member does not fold yet the partitions "
                "the group's coordinator gives it, so a merged answer would miss their rows; "
                "retry"
            )
        if isinstance(answers, Response):
            return answers  # the question itself is wrong (400): every member says so
        assert question.route.merge is not None
        merged = question.route.merge(answers, view)
        return redacted(merged) if self._redact and question.route.redact else merged

    async def _gather(
        self,
        question: Question,
        local: Callable[[], Awaitable[BaseModel | Response]],
        view: OwnerView,
    ) -> dict[str, Any] | Response | _Stale:
        """Every member's answer by projector id, asked with ``view``; ``_Stale`` when a
        member does not fold what the view gives it, or a member that did not answer has
        left the group (the next view gives its partitions to others)."""

        async def mine() -> BaseModel | Response | _Stale:
            if await self._gate.unfolded(_owned_by(view, self._id)):
                return _Stale()
            return await local()

        others = [m for m in view.members if m.projector_id != self._id]
        asked = (self._member_answer(m, question, _owned_by(view, m.projector_id)) for m in others)
        own, remote = await asyncio.gather(mine(), asyncio.gather(*asked))
        if isinstance(own, Response | _Stale) or any(isinstance(r, _Stale) for r in remote):
            return own if isinstance(own, Response) else _Stale()
        down = [r for r in remote if isinstance(r, MemberDownError)]
        if down:
            fresh = await run_in_threadpool(self._owners.refreshed)
            return _Stale(_without_the_silent(fresh, down, self._timeout_s))
        answers: dict[str, Any] = {self._id: own}
        answers.update((m.projector_id, r) for m, r in zip(others, remote, strict=True))
        return answers

    async def _local(
        self, question: Question, request: Request, call_next: CallNext
    ) -> BaseModel | Response:
        """This instance's own answer (the routes below the middleware): read, or an error."""
        response = await call_next(request)
        if response.status_code != 200:
            return response
        body = b"".join([chunk async for chunk in response.body_iterator])  # type: ignore[attr-defined]
        model: BaseModel = self._readers[question.route.path].validate_json(body)
        return model

    async def _member_answer(
        self, member: Member, question: Question, owned: Collection[int]
    ) -> Any:
        """A gathered member's answer, or why it has none (a gather needs every answer):
        ``_Stale`` when it does not fold ``owned``, the partitions the view gives it."""
        headers = {OWNED: ",".join(map(str, sorted(owned)))}
        try:
            response = await self._members.fetch(member, question.target, headers)
        except MemberDownError as down:
            return down
        if response.status_code == NoOwnerError.http_status:
            error = read_api.error_of(response.status_code, response.content, question.target)
            if isinstance(error, NoOwnerError):
                return _Stale()
        if response.status_code != 200:
            why = f"answered HTTP {response.status_code}: {response.content[:300]!r}"
            return MemberDownError(member, why)
        return self._read(question.route, response)

    # --- HTTP ------------------------------------------------------------------------

    def _read(self, route: ApiRoute, response: httpx.Response) -> Any:
        """A member's (read) answer as the route's model; redacted here unless it says it is."""
        answer = self._readers[route.path].validate_json(response.content)
        return redacted(answer) if self._must_redact(route, response) else answer

    def _must_redact(self, route: ApiRoute, response: httpx.Response) -> bool:
        """Whether results must be left out of a member's answer here: this instance
        redacts, the route carries results, and the member did not say it left them out."""
        return self._redact and route.redact and response.headers.get(REDACTED) != "true"

    def _json(self, route: ApiRoute, answer: BaseModel) -> Response:
        headers = {REDACTED: "true"} if self._redact and route.redact else None
        body = answer.model_dump_json().encode()
        return Response(body, 200, headers=headers, media_type="application/json")


def _owned_by(view: OwnerView, projector_id: str) -> list[int]:
    """The partitions ``view`` gives the member ``projector_id``."""
    return sorted(p for p, m in view.owners.items() if m.projector_id == projector_id)


def _partitions(header: str) -> list[int]:
    """``1,3,5`` as partitions (an unreadable header names none: nothing is waited for)."""
    try:
        return [int(p) for p in header.split(",") if p]
    except ValueError:
        return []


def _without_the_silent(
    fresh: OwnerView, down: Sequence[MemberDownError], timeout_s: float
) -> OwnerView:
    """``fresh``, once every member that did not answer has left the group.

    A member that is gone is not asked (its file cannot be); one still in the group may
    hold rows nobody else has: then the answer is a 503 naming it.
    """
    present = {m.projector_id for m in fresh.members}
    missing = [d for d in down if d.member.projector_id in present]
    if missing:
        names = "; ".join(str(d) for d in missing)
        raise OwnerUnavailableError(
            f"{len(missing)} member(s) of the projector group did not answer within "
            f"{timeout_s} s, so the merged answer would be incomplete: {names}"
        )
    return fresh
