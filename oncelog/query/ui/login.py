"""The UI follows the API's auth: open on loopback without a token, else token or session.

A browser cannot easily send ``Authorization: Bearer``, so with a token the UI
accepts either that header or a session cookie. ``POST /ui/login`` (the only
write the server accepts) compares the submitted token in constant time and sets
the cookie: ``<issued>.<HMAC-SHA256(token, issued)>``, never the token itself,
``HttpOnly; SameSite=Strict; Path=/ui``, valid for :data:`SESSION_S`. The cookie
opens ``/ui`` only: the ``/v1`` API keeps asking for the bearer header (the
cookie is not even sent there, by its path). Without either, a UI page answers
with a redirect to the login form.
"""

from __future__ import annotations

import hashlib
import hmac
import time
import urllib.parse
from collections.abc import Callable
from typing import Annotated, Final

from fastapi import FastAPI, Query, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import SecretStr

from oncelog.query.bearer import bearer_matches
from oncelog.query.ui.pages import UI_ROOT, login_page

UI_PREFIX: Final = "/ui"
LOGIN_PATH: Final = "/ui/login"
COOKIE: Final = "oncelog_ui_session"
SESSION_S: Final = 12 * 3600
MAX_FORM_BYTES: Final = 4096

Clock = Callable[[], float]


def is_ui_path(path: str) -> bool:
    """Is ``path`` the UI's (``/ui`` or below)? The UI guards those itself."""
    return path == UI_PREFIX or path.startswith(UI_PREFIX + "/")


def is_login_post(method: str, path: str) -> bool:
    """The one write the server accepts: the login form's POST, at exactly its path."""
    return method == "POST" and path == LOGIN_PATH


def safe_next(raw: str | None) -> str:
    """Where to go after login: a path under ``/ui/`` only (no open redirect)."""
    if raw is None or not raw.startswith(UI_ROOT) or "\\" in raw or raw.startswith("//"):
        return UI_ROOT
    return raw


class Sessions:
    """Makes and checks the session cookie of one token."""

    def __init__(self, token: SecretStr, clock: Clock = time.time) -> None:
        self._token = token.get_secret_value().encode()
        self._clock = clock

    def token_matches(self, submitted: str) -> bool:
        """Is ``submitted`` the token? Constant-time compare."""
        return hmac.compare_digest(submitted.encode(), self._token)

    def bearer_matches(self, header: str | None) -> bool:
        """Does an ``Authorization`` header carry the token?"""
        return bearer_matches(header, self._token)

    def new_cookie(self) -> str:
        """A cookie value for a session starting now."""
        issued = str(int(self._clock()))
        return f"{issued}.{self._mac(issued)}"

    def cookie_valid(self, value: str | None) -> bool:
        """Is ``value`` a cookie of this token, issued at most ``SESSION_S`` ago?"""
        if not value or "." not in value:
            return False
        issued, mac = value.split(".", 1)
        if not issued.isdigit() or not hmac.compare_digest(mac, self._mac(issued)):
            return False
        return 0 <= self._clock() - int(issued) <= SESSION_S

    def _mac(self, issued: str) -> str:
        message = f"oncelog-ui-session-v1:{issued}".encode()
        return hmac.new(self._token, message, hashlib.sha256).hexdigest()


def login_redirect(sessions: Sessions, request: Request) -> Response | None:
    """For a GET of a UI page without the token or a valid session cookie, the redirect
    to the login form (None: let it through). The app's guard asks it
    (:mod:`oncelog.query.guard`)."""
    path = request.url.path
    if path == LOGIN_PATH:
        return None
    header = request.headers.get("authorization")
    if sessions.bearer_matches(header) or sessions.cookie_valid(request.cookies.get(COOKIE)):
        return None
    wanted = path + (f"?{request.url.query}" if request.url.query else "")
    target = f"{LOGIN_PATH}?{urllib.parse.urlencode({'next': wanted})}"
    return RedirectResponse(target, status_code=303)


def install_login(app: FastAPI, sessions: Sessions) -> None:
    """The login form and its POST (the app's guard sends a UI page here without a session)."""

    @app.get(LOGIN_PATH, include_in_schema=False)
    def login_form(wanted: Annotated[str | None, Query(alias="next")] = None) -> HTMLResponse:
        return HTMLResponse(login_page(safe_next(wanted), failed=False))

    @app.post(LOGIN_PATH, include_in_schema=False)
    async def login(request: Request) -> Response:
        body = await request.body()
        form = urllib.parse.parse_qs(body[:MAX_FORM_BYTES].decode("utf-8", "replace"))
        submitted = form.get("token", [""])[0]
        target = safe_next(form.get("next", [None])[0])
        if len(body) > MAX_FORM_BYTES or not sessions.token_matches(submitted):
            return HTMLResponse(login_page(target, failed=True), status_code=401)
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            COOKIE,
            sessions.new_cookie(),
            max_age=SESSION_S,
            path=UI_PREFIX,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return response
