"""The HTTP API's error answers: RFC 9457 problem details with oncelog's stable ``code``.

One shape for every error of the read and the write API::

    HTTP/1.1 409 Conflict
    Content-Type: application/problem+json

    {"type": "urn:oncelog:problem:stale_claim", "title": "Conflict", "status": 409,
     "detail": "operation ...: this claim token is fenced (not the holder)",
     "code": "stale_claim", "message": "operation ...: ..."}

``type`` names the code as a URN (stable, and no page to keep alive); ``title`` is the
status's reason phrase; ``code`` and ``message`` are extension members, the ``code`` a
client matches on and the ``message`` the API answered before it spoke RFC 9457 (the
same text as ``detail``). Messages never carry a claim token (spec section 8).
"""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, Final

from fastapi.responses import JSONResponse
from pydantic import BaseModel

MEDIA_TYPE: Final = "application/problem+json"
TYPE_PREFIX: Final = "urn:oncelog:problem:"


class Problem(BaseModel):
    """An error answer (RFC 9457 problem details, with ``code`` and ``message``)."""

    type: str
    title: str
    status: int
    detail: str
    code: str
    message: str


class ProblemResponse(JSONResponse):
    """A JSON response served as ``application/problem+json``."""

    media_type = MEDIA_TYPE


def problem(status: int, code: str, message: str, **headers: str) -> ProblemResponse:
    """The problem+json answer for ``code`` at HTTP ``status``."""
    try:
        title = HTTPStatus(status).phrase
    except ValueError:
        title = "Error"
    body = Problem(
        type=f"{TYPE_PREFIX}{code}",
        title=title,
        status=status,
        detail=message,
        code=code,
        message=message,
    )
    return ProblemResponse(body.model_dump(), status_code=status, headers=headers)


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI ``responses`` entries for the error statuses a route may answer."""
    return {
        status: {
            "model": Problem,
            "description": HTTPStatus(status).phrase,
            "content": {MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
        for status in statuses
    }
