"""``oncelog approvals approve | deny``: a person's decision on an intent, from a terminal.

Each finds the intent in the pending list (the projector's API, or ``--db``), prints what
it decides, and sends the decision on the requests topic as ``--approver`` (a name,
recorded; never a token), bound to the listed request hash: params changed since are a
conflict (docs/guides/approvals.md). The decision is signed with ``--approver``'s key in
``ONCELOG_APPROVER_KEYS`` when this process holds it: an intent that lists approvers
takes no other. ``keygen`` makes a key pair. ``list`` is in :mod:`.query_cmd`.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Annotated

import typer

from oncelog.cli.query_cmd import DbOption, UrlOption, open_source
from oncelog.errors import InvalidArgumentError
from oncelog.identity.approver_signature import new_private_key, public_key_of
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.query.models import PendingApproval
from oncelog.settings import Settings

RunArgument = Annotated[str, typer.Argument(help="The run (channel) of the step.")]
KeyArgument = Annotated[str, typer.Argument(help="The step's key name.")]
ApproverOption = Annotated[
    str, typer.Option("--approver", help="Your name, recorded with the decision.")
]
HashOption = Annotated[
    str | None,
    typer.Option("--request-hash", help="The hash listed (default: the pending intent's)."),
]
ReasonOption = Annotated[str, typer.Option("--reason", help="Why: every later claim reads it.")]


def _pending(run: str, key: str, db: Path | None, url: str | None) -> PendingApproval:
    with open_source(db, url) as source:
        pending = source.approvals(10_000)
    found = next((p for p in pending if (p.channel_id, p.key_name) == (run, key)), None)
    if found is None or found.request_hash is None:
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
        typer.echo(f"{intent.tool_name} (request hash {intent.request_hash})")
        request_hash = intent.request_hash
    assert request_hash is not None
    settings = Settings()
    signing_key = settings.approver_key(approver)
    with SyncLedgerClient(settings, worker_id=approver) as client:
        decided = client.decide_approval(
            run, key, approver=approver, request_hash=request_hash, approve=approve,
            reason=reason, signing_key=signing_key,
        )  # fmt: skip
    typer.echo(f"{'approved' if approve else 'denied'}: {run}/{key} ({decided.id})")


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


def deny(
    run: RunArgument,
    key: KeyArgument,
    approver: ApproverOption,
    reason: ReasonOption,
    request_hash: HashOption = None,
    db: DbOption = None,
    url: UrlOption = None,
) -> None:
    """Deny the intent of RUN's step KEY: a terminal ``denied``, replayed with the reason."""
    _decide(run, key, approver, request_hash, reason, approve=False, db=db, url=url)


def keygen() -> None:
    """Print a new approver key pair: the private key for ONCELOG_APPROVER_KEYS (keep it
    secret), the public key for the workers' ONCELOG_APPROVERS."""
    private = new_private_key()
    public = base64.b64encode(public_key_of(base64.b64decode(private))).decode()
    typer.echo(f"private key (ONCELOG_APPROVER_KEYS, secret): {private}")
    typer.echo(f"public key (ONCELOG_APPROVERS): {public}")
