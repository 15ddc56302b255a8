"""The approvals page's forms: ``POST /ui/approvals/{operation_id}/approve|deny``.

A browser cannot send ``Authorization: Bearer`` from a plain form, and the pages allow no
script, so the person types their approver token into the form's password field
(:mod:`oncelog.query.ui.approvals_page`): it arrives in the body only, is compared with
``ONCELOG_HTTP_APPROVER_TOKENS`` like the API's bearer, and is never written back into a
page, a link or a redirect. The intent's channel and key come from the pending list (the
form names only the operation and the request hash the person saw). The answer is the
page again, with a banner saying what the ledger decided.
"""

from __future__ import annotations

import contextlib
import re
import urllib.parse
from collections.abc import Callable
from typing import Final, Protocol

import duckdb
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse
from pydantic import SecretStr
from starlette.concurrency import run_in_threadpool

from oncelog.errors import LedgerError
from oncelog.producer.results import Execution
from oncelog.query.approvals import pending_approvals
from oncelog.query.bearer import whose_token
from oncelog.query.models import PendingApproval
from oncelog.query.ui.approvals_page import APPROVALS_PATH, approvals_page
from oncelog.query.ui.login import MAX_FORM_BYTES
from oncelog.query.ui.routes import HEADERS


class Decider(Protocol):
    """Who sends a decision (:class:`~oncelog.gateway.approval_desk.ApprovalDesk`)."""

    @property
    def tokens(self) -> dict[str, SecretStr]:
        """The approvers' tokens, by name."""
        ...

    async def send(
        self,
        approver: str,
        operation_id: str,
        *,
        channel_id: str,
        key_name: str,
        request_hash: str,
        reason: str,
        approve: bool,
        request_id: str | None = None,
    ) -> Execution:
        """Send ``approver``'s signed decision; the execution it left."""
        ...


_FORM_PATH: Final = re.compile(r"^/ui/approvals/[^/]+/(approve|deny)$")
_LISTED: Final = 10_000


def is_form_path(path: str) -> bool:
    """Whether ``path`` is one of the page's decision forms."""
    return _FORM_PATH.match(path) is not None


def install_forms(
    app: FastAPI,
    desk: Decider,
    cursor_factory: Callable[[], duckdb.DuckDBPyConnection],
) -> None:
    """Add the forms' POST routes beside the page."""

    def pending() -> list[PendingApproval]:
        with contextlib.closing(cursor_factory()) as con:
            return pending_approvals(con, _LISTED)

    async def page(message: str, status: int) -> HTMLResponse:
        rows = await run_in_threadpool(pending)
        markup = approvals_page(rows, message=message, failed=status != 200)
        return HTMLResponse(markup, status_code=status, headers=HEADERS)

    @app.post(APPROVALS_PATH + "/{operation_id}/{verb}", include_in_schema=False)
    async def decide(operation_id: str, verb: str, request: Request) -> HTMLResponse:
        body = await request.body()
        form = urllib.parse.parse_qs(body[:MAX_FORM_BYTES].decode("utf-8", "replace"))
        approver = whose_token(desk.tokens, form.get("token", [None])[0])
        if verb not in {"approve", "deny"} or len(body) > MAX_FORM_BYTES:
            return await page("not a decision form", 400)
        if approver is None:
            return await page("that is not an approver's token: nothing was decided", 401)
        intent = next((p for p in await run_in_threadpool(pending)
                       if p.operation_id == operation_id), None)  # fmt: skip
        if intent is None:
            return await page("that intent no longer awaits a decision", 409)
        reason = form.get("reason", [""])[0]
        try:
            execution = await desk.send(
                approver, operation_id, channel_id=intent.channel_id, key_name=intent.key_name,
                request_hash=form.get("request_hash", [""])[0], reason=reason,
                approve=verb == "approve",
            )  # fmt: skip
        except LedgerError as exc:
            return await page(f"{exc.code}: {exc.message}", exc.http_status)
        done = f"{execution.status}: {intent.channel_id} / {intent.key_name} by {approver}"
        return await page(done, 200)
