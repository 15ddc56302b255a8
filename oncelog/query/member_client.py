"""Ask one member of the projector group over HTTP, within a timeout.

Used by :mod:`oncelog.query.routing`. The request carries this instance's own
bearer token (only in ``Authorization``) and the headers it is given, nothing of
the caller's request. A member that gives no answer in time, refuses the token or
serves no API is a :class:`MemberDownError`, which the routing turns into a 503.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping
from typing import TypeVar

import httpx
from pydantic import SecretStr

from oncelog.query.owners import Member

T = TypeVar("T")


class MemberDownError(Exception):
    """A member did not answer usefully (timeout, refused, no API); internal."""

    def __init__(self, member: Member, why: str) -> None:
        super().__init__(f"{member.describe()}: {why}")
        self.member = member


class MemberClient:
    """One HTTP client for every member, opened on first use, closed by :meth:`aclose`."""

    def __init__(
        self, token: SecretStr | None, timeout_s: float, headers: Mapping[str, str]
    ) -> None:
        self._timeout_s = timeout_s
        # Identity: a member's body is passed on as its bytes, never decompressed here.
        self._headers = {"Accept": "application/json", "Accept-Encoding": "identity", **headers}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token.get_secret_value()}"
        self._http: httpx.AsyncClient | None = None

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._http is not None:
            await self._http.aclose()

    async def fetch(
        self, member: Member, target: str, headers: Mapping[str, str] | None = None
    ) -> httpx.Response:
        """The member's whole answer to ``target`` (with ``headers`` besides this client's
        own), within the timeout."""

        async def whole() -> httpx.Response:
            response = await self.open(member, target, headers)
            try:
                await response.aread()
            finally:
                await response.aclose()
            return response

        return await self.within(member, whole())

    async def within(self, member: Member, work: Awaitable[T]) -> T:
        """``work`` on ``member``, at most ``timeout_s``; no answer is a ``MemberDownError``."""
        try:
            return await asyncio.wait_for(work, self._timeout_s)
        except (TimeoutError, httpx.HTTPError) as exc:
            raise MemberDownError(member, f"{type(exc).__name__}: {exc}".rstrip(": ")) from exc

    async def open(
        self, member: Member, target: str, headers: Mapping[str, str] | None = None
    ) -> httpx.Response:
        """GET ``target`` (path and query string) from ``member``: the status and headers."""
        if member.url is None:
            raise MemberDownError(member, "it serves no query API")
        client = self._client()
        request = client.build_request(
            "GET", member.url.rstrip("/") + target, headers={**self._headers, **(headers or {})}
        )
        response = await client.send(request, stream=True)
        if response.status_code in (401, 403):
            await response.aclose()
            why = "it refused this instance's bearer token (set one ONCELOG_HTTP_TOKEN for all)"
            raise MemberDownError(member, why)
        return response

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(timeout=self._timeout_s, follow_redirects=False)
        return self._http
