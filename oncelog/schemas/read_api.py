"""The query API as its Python clients address it: paths, path segments, error answers.

One place for what :class:`oncelog.query.source.HttpSource` (the CLI),
:class:`oncelog.integrations.langgraph.transport.CheckpointReader` (the saver) and the
group's forwarding (:mod:`oncelog.query.routing`) share. The route table
(:data:`oncelog.query.api.ROUTES`) takes its paths from here, so a client and the server
cannot spell one differently; a path's ``{name}`` parts are filled by :func:`path`,
each value quoted as one segment.

Every error answer is problem+json with oncelog's stable ``code``
(:mod:`oncelog.query.problem`): :func:`error_of` raises the class that declared that
code (the :class:`~oncelog.errors.LedgerError` registry), as the TypeScript SDK does,
and falls back on the HTTP status only for an answer without a code it knows.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Final

from oncelog.errors import (
    InvalidArgumentError,
    LedgerError,
    LedgerTimeoutError,
    NotFoundError,
    ServeUnreachableError,
    UnauthorizedError,
)

HEALTHZ: Final = "/healthz"
STATUS: Final = "/v1/status/{channel_id}/{step_or_key}"
HISTORY: Final = "/v1/history/{operation_id}"
TIMELINE: Final = "/v1/timeline/{channel_id}"
SIDE_EFFECTS: Final = "/v1/side-effects/{channel_id}"
DUPLICATES: Final = "/v1/duplicates"
APPROVALS: Final = "/v1/approvals"
POSITIONS: Final = "/v1/positions"
# LangGraph's checkpoints: a thread id is a channel id (its partition answers).
THREAD_CHECKPOINTS: Final = "/v1/checkpoints/{channel_id}"
CHECKPOINTS: Final = "/v1/checkpoints"
THREAD_PARTS: Final = "/v1/checkpoint-parts/{channel_id}"
THREAD_HEADS: Final = "/v1/checkpoint-heads/{channel_id}"
RUN_PARTS: Final = "/v1/checkpoint-parts"
EXPORT: Final = "/v1/export"
"""The projection's tables as zipped Parquet (not a JSON route: not in the route table)."""


def segment(part: str) -> str:
    """``part`` quoted as one segment of a path (a ``/`` in it included)."""
    return urllib.parse.quote(part, safe="")


def path(template: str, **params: str) -> str:
    """``template`` (one of the paths above) with each ``{name}`` the quoted ``params[name]``."""
    return template.format(**{name: segment(value) for name, value in params.items()})


# The class of an answer whose code this process does not know (a newer server, or an
# error class of a module not imported), or that has none (a proxy's page).
_BY_STATUS: Final[dict[int, type[LedgerError]]] = {
    400: InvalidArgumentError,
    401: UnauthorizedError,
    404: NotFoundError,
    422: InvalidArgumentError,
    503: ServeUnreachableError,
    504: LedgerTimeoutError,
}

_TOKEN_HINT: Final = " (set ONCELOG_HTTP_TOKEN to the API's token)"


def error_of(status: int, body: bytes, asked: str) -> LedgerError:
    """The :class:`LedgerError` an error answer of the API stands for.

    ``status`` and ``body`` are the answer's; ``asked`` names the question (``GET <url>``)
    for the message. The class is the one that declared the answer's ``code``
    (:meth:`LedgerError.class_of`), else the one of its HTTP status, else
    :class:`LedgerError`; the message is the answer's.
    """
    code, message = _problem(body)
    cls = LedgerError.class_of(code) if code is not None else None
    if cls is None:
        cls = _BY_STATUS.get(status, LedgerError)
    text = f"{asked} answered HTTP {status}: {message}"
    if issubclass(cls, UnauthorizedError):
        text += _TOKEN_HINT
    error = cls.answered(text)
    if code is not None and error.code != code:  # unknown here, or not made from a message
        error = type(error)(f"{text} (code {code})")
    return error


def _problem(body: bytes) -> tuple[str | None, str]:
    """``(code, message)`` of a problem+json body; no code and the raw text for another."""
    raw = body[:300].decode(errors="replace")
    try:
        answer = json.loads(body)
    except ValueError:
        return None, raw
    if not isinstance(answer, dict):
        return None, raw
    code, message = answer.get("code"), answer.get("message")
    return (
        code if isinstance(code, str) else None,
        message if isinstance(message, str) else raw,
    )
