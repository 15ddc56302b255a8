"""The query API's routes, declared once: path, who answers in a group, handler, model.

:func:`oncelog.query.http.create_app` registers a FastAPI route for each entry of
:data:`ROUTES`; :class:`oncelog.query.routing.QueryRouter` matches a request
against the same entries (Starlette's route matching) to decide who answers it:

- ``"here"``: this instance, always (``/healthz``).
- ``"owner"``: the member owning the partition of the channel named by the path
  parameter ``channel_id`` (it holds the channel's current states).
- ``"every"``: every member, their pages merged by the entry's ``merge``.

Redaction is :func:`redacted`, the only place that leaves results out. A route
marked ``redact`` applies it to its answer when the app redacts
(``--redact-results``) or when a forwarded request carries
``Oncelog-Redact-Results`` (a forwarding member that redacts asks its owner to),
and then says so in the ``Oncelog-Results-Redacted`` header of its answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal, Protocol, TypeVar

from fastapi import Depends, FastAPI, Query, Request, Response
from pydantic import BaseModel

from oncelog.identity.ids import key_of
from oncelog.query import approvals as approvals_query
from oncelog.query import checkpoint_routes as ckpt
from oncelog.query import effects as effects_query
from oncelog.query import merge, queries
from oncelog.query.checkpoint_heads import CheckpointHead, thread_heads
from oncelog.query.models import (
    Page,
    PendingApproval,
    Positions,
    SideEffects,
    StepStatus,
    SuspectedDuplicate,
    TimelineEntry,
    Version,
)
from oncelog.query.owners import OwnerView
from oncelog.query.paging import Con, Limit, MaxRows, page_of
from oncelog.query.problem import problem_responses
from oncelog.schemas import read_api as paths
from oncelog.schemas.checkpoint_answers import CheckpointItem, CheckpointPart

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

FORWARDED_BY: Final = "oncelog-forwarded-by"
"""The header that marks a forwarded request (value: the sender's projector id)."""
REDACT: Final = "oncelog-redact-results"
"""A forwarded request's header: answer with results left out, whatever this instance's
setting (the forwarding member redacts)."""
REDACTED: Final = "oncelog-results-redacted"
"""An answer header (value ``true``): :func:`redacted` was applied to this answer."""
OWNED: Final = "oncelog-owned-partitions"
"""A gathered request's header (``1,3,5``): the partitions the gathering instance's view
gives the member asked, which answers once it folds them (else ``no_owner``)."""

Answerer = Literal["here", "owner", "every"]
Merge = Callable[[Mapping[str, Any], OwnerView], BaseModel]
"""Members' answers (by projector id) and the owner view -> the merged answer."""


def redacted(answer: M) -> M:
    """``answer`` (a status, a version or a page of them) with ``result`` null and
    ``result_redacted`` true; ``result_hash`` stays, so that auditors can compare."""
    if isinstance(answer, Page):
        return answer.model_copy(update={"items": [redacted(item) for item in answer.items]})
    return answer.model_copy(update={"result": None, "result_redacted": True})


def _as_is(answer: M) -> M:
    return answer


# --- what the handlers depend on -------------------------------------------------------


class Shower(Protocol):
    """:func:`redacted`, or the answer as it is."""

    def __call__(self, answer: M, /) -> M: ...


def shower(redact: bool) -> Shower:
    """:func:`redacted` when ``redact``, else the answer as it is."""
    return redacted if redact else _as_is


def _show(request: Request, response: Response) -> Shower:
    headers = request.headers
    redact = bool(request.app.state.redact_results) or (
        REDACT in headers and FORWARDED_BY in headers
    )
    if redact:
        response.headers[REDACTED] = "true"
    return shower(redact)


Show = Annotated[Shower, Depends(_show)]
AsOf = Annotated[str | None, Query(description="An offset of the channel's partition, or ISO-8601")]
Offset = Annotated[int | None, Query(description="An offset of the channel's partition")]
Time = Annotated[str | None, Query(description="A log time, ISO-8601 with a zone")]
Step = Annotated[int | None, Query(description="A step number: the key step-<N>")]
Key = Annotated[str | None, Query(description="A key name: its span on the log")]


# --- the handlers ----------------------------------------------------------------------


def healthz(con: Con) -> dict[str, str]:  # no docstring: it would be the OpenAPI text
    con.execute("SELECT 1").fetchall()
    return {"status": "ok"}


def status(
    con: Con, show: Show, channel_id: str, step_or_key: str, as_of: AsOf = None
) -> StepStatus:
    """Did this step (a number) or key finish, now or as of a position?"""
    point = queries.parse_as_of(as_of)
    return show(queries.step_status(con, channel_id, key_name=key_of(step_or_key), as_of=point))


def history(
    con: Con, show: Show, max_rows: MaxRows, operation_id: str, limit: Limit = 100
) -> Page[Version]:
    """Every state version of one operation, oldest first."""
    return show(page_of(lambda n: queries.operation_history(con, operation_id, n), limit, max_rows))


def timeline(
    con: Con, max_rows: MaxRows, channel_id: str, limit: Limit = 100
) -> Page[TimelineEntry]:
    """Every request of a channel and its outcome, in log order."""
    return page_of(lambda n: queries.channel_timeline(con, channel_id, n), limit, max_rows)


@dataclass(frozen=True)
class Range:
    """The two ends of a side-effects range, from the query: each one of an offset, a time,
    a step or a key (FastAPI fills it in)."""

    from_offset: Offset = None
    to_offset: Offset = None
    from_time: Time = None
    to_time: Time = None
    from_step: Step = None
    to_step: Step = None
    from_key: Key = None
    to_key: Key = None

    def ends(self) -> tuple[effects_query.Bound, effects_query.Bound]:
        """The start and the end (``invalid_argument`` unless each is given exactly once)."""
        start = effects_query.bound(
            "from",
            offset=self.from_offset,
            time=self.from_time,
            step=self.from_step,
            key=self.from_key,
        )
        end = effects_query.bound(
            "to", offset=self.to_offset, time=self.to_time, step=self.to_step, key=self.to_key
        )
        return start, end


def effects(
    con: Con,
    max_rows: MaxRows,
    channel_id: str,
    ends: Annotated[Range, Depends()],
    limit: Limit = 1000,
) -> SideEffects:
    """Which keys were declared pure and which external between two positions of a channel;
    each end is one of an offset, a time, a step or a key."""
    start, end = ends.ends()
    return effects_query.side_effects(con, channel_id, start, end, min(limit, max_rows))


def duplicates(con: Con, max_rows: MaxRows, limit: Limit = 100) -> Page[SuspectedDuplicate]:
    """Completions by fenced tokens: side effects that may have happened twice."""
    return page_of(lambda n: queries.suspected_duplicates(con, n), limit, max_rows)


def approvals(con: Con, max_rows: MaxRows, limit: Limit = 100) -> Page[PendingApproval]:
    """Intents awaiting a person's approve or deny, oldest first."""
    return page_of(lambda n: approvals_query.pending_approvals(con, n), limit, max_rows)


def positions(con: Con) -> Positions:
    """How far the projection has folded and committed, per requests partition."""
    return queries.positions(con)


# --- how a group merges the members' answers -------------------------------------------


def _pages(answers: Mapping[str, Any]) -> list[Any]:
    """Each member's page, in projector-id order (the merge keeps the first of equal rows)."""
    return [answers[member] for member in sorted(answers)]


def _merged_positions(answers: Mapping[str, Any], view: OwnerView) -> Positions:
    owners = {p: member.projector_id for p, member in view.owners.items()}
    return merge.merge_positions(answers, owners)


# --- the table -------------------------------------------------------------------------


@dataclass(frozen=True)
class ApiRoute:
    """One GET route of the API: its path, who answers it in a group, and how."""

    path: str
    answerer: Answerer
    endpoint: Callable[..., Any]
    model: Any
    """The answer's model: FastAPI's ``response_model``, and what a member's body is read as."""
    merge: Merge | None = None
    """For ``"every"``: how the members' answers become one."""
    redact: bool = False
    """Whether the answer carries results, which :func:`redacted` leaves out."""


def _merged(how: Callable[[list[Any]], BaseModel]) -> Merge:
    return lambda answers, _view: how(_pages(answers))


HEALTHZ: Final = ApiRoute(paths.HEALTHZ, "here", healthz, dict[str, str])
STATUS: Final = ApiRoute(paths.STATUS, "owner", status, StepStatus, redact=True)
HISTORY: Final = ApiRoute(
    paths.HISTORY,
    "every",
    history,
    Page[Version],
    _merged(merge.merge_history),
    redact=True,
)
TIMELINE: Final = ApiRoute(
    paths.TIMELINE,
    "every",
    timeline,
    Page[TimelineEntry],
    _merged(merge.merge_timeline),
)
SIDE_EFFECTS: Final = ApiRoute(paths.SIDE_EFFECTS, "owner", effects, SideEffects)
DUPLICATES: Final = ApiRoute(
    paths.DUPLICATES,
    "every",
    duplicates,
    Page[SuspectedDuplicate],
    _merged(merge.merge_duplicates),
)
APPROVALS: Final = ApiRoute(
    paths.APPROVALS,
    "every",
    approvals,
    Page[PendingApproval],
    _merged(merge.merge_approvals),
)
POSITIONS: Final = ApiRoute(paths.POSITIONS, "every", positions, Positions, _merged_positions)
# LangGraph's checkpoints (oncelog.integrations.langgraph): a thread id is a channel id.
THREAD_CHECKPOINTS: Final = ApiRoute(
    paths.THREAD_CHECKPOINTS, "owner", ckpt.thread_checkpoints, Page[CheckpointItem]
)
CHECKPOINTS: Final = ApiRoute(
    paths.CHECKPOINTS, "every", ckpt.all_checkpoints, Page[CheckpointItem], ckpt.merge_checkpoints
)
THREAD_PARTS: Final = ApiRoute(paths.THREAD_PARTS, "owner", ckpt.thread_parts, Page[CheckpointPart])
THREAD_HEADS: Final = ApiRoute(paths.THREAD_HEADS, "owner", thread_heads, Page[CheckpointHead])
RUN_PARTS: Final = ApiRoute(
    paths.RUN_PARTS, "every", ckpt.run_parts, Page[CheckpointPart], ckpt.merge_parts
)

ROUTES: Final = (
    HEALTHZ,
    STATUS,
    HISTORY,
    TIMELINE,
    SIDE_EFFECTS,
    DUPLICATES,
    APPROVALS,
    POSITIONS,
    THREAD_CHECKPOINTS,
    CHECKPOINTS,
    THREAD_PARTS,
    RUN_PARTS,
    THREAD_HEADS,
)
"""Every route of the API, in the order of its OpenAPI schema; the UI's HTML pages and
``/metrics`` are added apart. The paths are :mod:`oncelog.schemas.read_api`'s, which the
Python clients fill."""


# What a read route may answer besides its model: a bad argument, a missing or wrong
# token, an unknown step, and a member or store that cannot answer.
_ERRORS: Final = problem_responses(400, 401, 404, 503)


def install_routes(app: FastAPI) -> None:
    """Register a FastAPI GET route for each entry of :data:`ROUTES`."""
    for route in ROUTES:
        app.add_api_route(
            route.path,
            route.endpoint,
            methods=["GET"],
            response_model=route.model,
            responses=_ERRORS,
        )
