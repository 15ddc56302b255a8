"""The pending approvals page: each intent awaiting a person, with approve and deny forms.

Pure. The pages allow no script (the routes' Content-Security-Policy), so each decision
is a plain form that POSTs to the UI's own route beside the page: the approver's token is
a password field the person fills in, sent in the form's body only; it is never written
into the page, a link or a redirect, and the page is never rendered with it. The request
hash the person saw rides in a hidden field, so the decision binds to exactly the params
shown (another hash is a conflict, docs/spec.md §4). Every value from the log is escaped.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Mapping, Sequence
from html import escape
from typing import Final

from oncelog.query.models import PendingApproval
from oncelog.query.times import utc
from oncelog.query.ui.pages import UI_ROOT, document, run_href

APPROVALS_PATH: Final = UI_ROOT + "approvals"


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def decision_path(operation_id: str, verb: str) -> str:
    """Where a decision form POSTs: ``/ui/approvals/{operation_id}/approve|deny``."""
    return f"{APPROVALS_PATH}/{urllib.parse.quote(operation_id, safe='')}/{verb}"


def approvals_page(
    rows: Sequence[PendingApproval],
    params: Mapping[str, object] | None = None,
    *,
    message: str | None = None,
    failed: bool = False,
) -> str:
    """The page: a banner (``message``: the last decision's answer, or its problem when
    ``failed``), then one row a pending intent with its forms. ``params``: each intent's
    params by operation id (default: each row's own)."""
    banner = ""
    if message is not None:
        tone = "banner error" if failed else "banner"
        banner = f"<div class='{tone}' id='answer'>{_e(message)}</div>"
    if not rows:
        table = "<p id='none'>No approval is pending.</p>"
    else:
        head = "".join(
            f"<th>{c}</th>"
            for c in ("tool", "run", "step", "params", "requested", "deadline", "decide")
        )
        known = params or {r.operation_id: r.params for r in rows if r.params is not None}
        lines = "".join(_row(r, known.get(r.operation_id, _UNKNOWN)) for r in rows)
        table = f"<table id='pending'><tr>{head}</tr>{lines}</table>"
    body = f"<h1>Pending approvals</h1>{banner}{table}"
    return document("Pending approvals", body)


_UNKNOWN: Final = object()


def _row(row: PendingApproval, shown: object) -> str:
    if shown is _UNKNOWN:
        params = "(not in the projection: see the run's claim)"
    else:
        params = json.dumps(shown, sort_keys=True, ensure_ascii=False)
    cells = (
        f"<td>{_e(row.tool_name or '?')}</td>"
        f"<td><a href='{_e(run_href(row.channel_id))}'>{_e(row.channel_id)}</a></td>"
        f"<td>{_e(row.key_name)}</td><td class='mono params'>{_e(params)}</td>"
        f"<td>{utc(row.requested_at_ms)}"
        f"<div class='sub'>at {row.partition}:{row.offset}</div></td>"
        f"<td>{utc(row.deadline_ms)}</td>"
    )
    forms = _form(row, "approve", "") + _form(
        row, "deny", "<input name='reason' placeholder='reason' required>"
    )
    return f"<tr data-operation='{_e(row.operation_id)}'>{cells}<td>{forms}</td></tr>"


def _form(row: PendingApproval, verb: str, extra: str) -> str:
    return (
        f"<form method='post' action='{_e(decision_path(row.operation_id, verb))}' "
        f"class='{verb}'><input type='hidden' name='request_hash' "
        f"value='{_e(row.request_hash or '')}'>"
        f"{extra}<input type='password' name='token' placeholder='approver token' "
        f"autocomplete='off' required><button type='submit'>{verb}</button></form>"
    )
