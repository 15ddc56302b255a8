"""``oncelog approvals list | approve | deny``: the intents awaiting a person, decided here.

``list`` reads like the other queries (the projector's API, or ``--db``). ``approve`` and
``deny`` show what they decide, then send the decision on the requests topic as
``--approver`` (a name, recorded; never a token), bound to the request hash shown: params
changed since are a conflict (docs/guides/approvals.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from oncelog.cli.query_cmd import (
    DbOption,
    LimitOption,
    UrlOption,
    open_source,
    query_command,
    table_of,
)
from oncelog.errors import InvalidArgumentError
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.query.models import PendingApproval
from oncelog.query.source import QuerySource
from oncelog.settings import Settings

app = typer.Typer(help="Intents awaiting a person's approval: list, approve, deny.")

_COLUMNS = "channel_id key_name tool_name params requested_by deadline_ms"
_WIDE = f"operation_id partition {_COLUMNS} requested_at_ms request_hash self_approval"


@app.command("list")
@query_command(table_of(_COLUMNS, _WIDE, "pending approvals ({n})"), table=True)
def list_pending(source: QuerySource, limit: LimitOption = 100) -> list[PendingApproval]:
    """Intents nobody decided yet, oldest first: the tool, its params, who asked, until when."""
    return source.approvals(limit)


RunArgument = Annotated[str, typer.Argument(help="The run (channel) of the step.")]
KeyArgument = Annotated[str, typer.Argument(help="The step's key name.")]
ApproverOption = Annotated[
    str, typer.Option("--approver", help="Your name, recorded with the decision.")
]
HashOption = Annotated[
    str | None,
    typer.Option("--request-hash", help="The hash listed (default: the pending intent's)."),
]


def _pending(run: str, key: str, db: Path | None, url: str | None) -> PendingApproval:
    with open_source(db, url) as source:
        pending = source.approvals(10_000)
    found = next((p for p in pending if (p.channel_id, p.key_name) == (run, key)), None)
    if found is None:
        raise InvalidArgumentError(
            f"no intent of {run!r}/{key!r} awaits approval: see `oncelog approvals list`"
        )
    return found


def _decide(
    run: str, key: str, approver: str, request_hash: str | None, reason: str, *, approve: bool,
    db: Path | None, url: str | None,
) -> None:  # fmt: skip
    if request_hash is None:
        intent = _pending(run, key, db, url)
        typer.echo(f"{intent.tool_name} {intent.params} asked by {intent.requested_by}")
        request_hash = intent.request_hash
    with SyncLedgerClient(Settings(), worker_id=approver) as client:
        decided = client.decide_approval(
            run, key, approver=approver, request_hash=request_hash, approve=approve, reason=reason
        )
    typer.echo(f"{'approved' if approve else 'denied'}: {run}/{key} ({decided.id})")


@app.command("approve")
def approve(
    run: RunArgument,
    key: KeyArgument,
    approver: ApproverOption,
    request_hash: HashOption = None,
    db: DbOption = None,
    url: UrlOption = None,
) -> None:
    """Approve the intent of RUN's step KEY: its next claim runs with exactly these params."""
    _decide(run, key, approver, request_hash, "", approve=True, db=db, url=url)


@app.command("deny")
def deny(
    run: RunArgument,
    key: KeyArgument,
    approver: ApproverOption,
    reason: Annotated[str, typer.Option("--reason", help="Why: every later claim reads it.")],
    request_hash: HashOption = None,
    db: DbOption = None,
    url: UrlOption = None,
) -> None:
    """Deny the intent of RUN's step KEY: a terminal ``denied``, replayed with the reason."""
    _decide(run, key, approver, request_hash, reason, approve=False, db=db, url=url)
