"""Who may call which path of the HTTP app: one check of the bearer token, by the path's realm.

Every path belongs to one realm (:func:`Access.realm`):

- ``open``: ``/healthz`` answers only "ok" (process supervisors probe it), and the
  OpenAPI schema describes routes and models, with no data and no secrets.
- ``write``: the write API's paths (:mod:`oncelog.gateway`), which need
  ``ONCELOG_HTTP_WRITE_TOKEN``.
- ``decide``: the approval routes (:mod:`oncelog.gateway.approval_desk`), which need one
  of ``ONCELOG_HTTP_APPROVER_TOKENS``: no other token decides.
- ``ui``: ``/ui`` and below. A browser cannot easily send ``Authorization: Bearer``,
  so a page takes the read token or the UI's session cookie, else redirects to the
  login form (:mod:`oncelog.query.ui.login`).
- ``read``: every other path, including ones added later, which needs
  ``ONCELOG_HTTP_TOKEN`` when one is set.

Then only the write and decide realms take a method other than GET (and the login form its
POST): a 405 answers any other before routing, so that no route added later can accept
a write by accident. Tokens are compared in constant time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Final, Literal

from fastapi import Request, Response
from pydantic import SecretStr
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.types import ASGIApp

from oncelog.errors import UnauthorizedError
from oncelog.query.bearer import bearer_matches
from oncelog.query.problem import problem
from oncelog.query.ui.login import Sessions, is_login_post, is_ui_path, login_redirect

Realm = Literal["open", "read", "write", "decide", "ui"]
CallNext = Callable[[Request], Awaitable[Response]]

OPEN_PATHS: Final = frozenset({"/healthz", "/openapi.json"})
"""The paths open without a token."""
ALLOWED_METHODS: Final = frozenset({"GET"})
"""The methods of every realm but the write API's."""

# What a 401 tells the caller it lacks, by realm.
_NEEDS: Final = {
    "read": "this API needs its bearer token (Authorization: Bearer ...)",
    "write": "the write API needs ONCELOG_HTTP_WRITE_TOKEN as its bearer",
    "decide": "deciding needs an approver's token (ONCELOG_HTTP_APPROVER_TOKENS) as its bearer",
}


@dataclass(frozen=True)
class Access:
    """The tokens of each realm. ``writes`` tells the write API's paths (None: no write API,
    its realm is empty); ``read_token`` None leaves the read and UI realms open."""

    read_token: SecretStr | None
    write_token: SecretStr | None
    writes: Callable[[str], bool] | None
    #: The approval routes' tokens, and which paths they are (None: no such routes).
    approver_tokens: tuple[SecretStr, ...] = ()
    decides: Callable[[str], bool] | None = None

    @cached_property
    def _sessions(self) -> Sessions:
        assert self.read_token is not None
        return Sessions(self.read_token)

    def realm(self, path: str) -> Realm:
        """The realm of ``path``."""
        if path in OPEN_PATHS:
            return "open"
        if self.writes is not None and self.writes(path):
            return "write"
        if self.decides is not None and self.decides(path):
            return "decide"
        return "ui" if is_ui_path(path) else "read"

    def token_refusal(self, realm: Literal["read", "write"], header: str | None) -> Response | None:
        """The 401 for a request of ``realm`` whose ``Authorization`` header is ``header``
        (None: no header), or None when it carries the realm's token (or the realm needs none)."""
        token = self.read_token if realm == "read" else self.write_token
        if token is None or bearer_matches(header, token.get_secret_value().encode()):
            return None
        why = "no bearer token" if header is None else "a wrong bearer token"
        message = f"{_NEEDS[realm]}; got {why}"
        return problem(401, UnauthorizedError.code, message, **{"WWW-Authenticate": "Bearer"})

    def decider_refusal(self, header: str | None) -> Response | None:
        """The 401 for an approval route's request without an approver's token, or None."""
        if any(bearer_matches(header, t.get_secret_value().encode()) for t in self.approver_tokens):
            return None
        why = "no bearer token" if header is None else "a token that is no approver's"
        message = f"{_NEEDS['decide']}; got {why}"
        return problem(401, UnauthorizedError.code, message, **{"WWW-Authenticate": "Bearer"})

    def refusal(self, request: Request) -> Response | None:
        """The answer that refuses ``request`` (401, a login redirect or 405), or None."""
        path = request.url.path
        realm = self.realm(path)
        if realm in {"read", "write"}:
            refused = self.token_refusal(realm, request.headers.get("authorization"))
            if refused is not None:
                return refused
        elif realm == "decide" and not is_ui_path(path):  # a form's token is in its body
            refused = self.decider_refusal(request.headers.get("authorization"))
            if refused is not None:
                return refused
        elif realm == "ui" and self.read_token is not None and request.method == "GET":
            redirect = login_redirect(self._sessions, request)
            if redirect is not None:
                return redirect
        if realm in {"write", "decide"} or request.method in ALLOWED_METHODS:
            return None
        if is_login_post(request.method, path):
            return None
        message = f"{request.method} is not allowed: this API is read-only"
        return problem(405, "method_not_allowed", message, Allow="GET")


class Guard(BaseHTTPMiddleware):
    """The app's first middleware: :meth:`Access.refusal`, before anything else runs."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        super().__init__(app)
        self._access = access

    async def dispatch(self, request: Request, call_next: CallNext) -> Response:
        """Refuse, or pass the request on."""
        refusal = self._access.refusal(request)
        return refusal if refusal is not None else await call_next(request)
