"""The ``oncelog`` command line: settings are built here, once, and passed down."""

from __future__ import annotations

import sys
import warnings

import typer
from rich.console import Console
from rich.markup import escape

from oncelog.cli import (
    approvals_cmd,
    archive_cmd,
    broker_cmd,
    gateway_cmd,
    query_cmd,
    rebuild_cmd,
    serve_cmd,
    topics_cmd,
)
from oncelog.errors import LedgerError
from oncelog.settings import Settings
from oncelog.settings_env import UnknownSettingWarning

app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    help="oncelog: an execution ledger for agent fleets, on Kafka and DuckDB.",
)


@app.callback()
def _check_settings() -> None:
    # Every command reads the ONCELOG_* settings: a bad value fails here, before any
    # command starts, with the one error main() prints; an unknown name is one line too.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnknownSettingWarning)
        Settings()
    for warning in caught:
        message = f"[yellow]warning[/yellow] {escape(str(warning.message))}"
        Console(stderr=True).print(message, highlight=False, soft_wrap=True)


app.add_typer(broker_cmd.app, name="broker")
app.add_typer(topics_cmd.app, name="topics")
app.add_typer(archive_cmd.app, name="archive")
app.command("serve")(serve_cmd.serve)
app.command("gateway")(gateway_cmd.gateway)
app.command("rebuild")(rebuild_cmd.rebuild)
app.command("verify")(rebuild_cmd.verify_cmd)
for _command in (query_cmd.status, query_cmd.history, query_cmd.timeline, query_cmd.effects):
    app.command()(_command)
app.command("duplicates")(query_cmd.duplicates)
app.command("export")(query_cmd.export)
approvals_app = typer.Typer(help="Intents awaiting a person's approve or deny.")
approvals_app.command("list")(query_cmd.approvals_list)
approvals_app.command("approve")(approvals_cmd.approve)
approvals_app.command("deny")(approvals_cmd.deny)
approvals_app.command("keygen")(approvals_cmd.keygen)
app.add_typer(approvals_app, name="approvals")


def main() -> None:
    """Entry point: run the app and turn ledger errors into a message and exit code 2."""
    try:
        app()
    except LedgerError as exc:
        # One line, however narrow the terminal: scripts grep it, and the code leads it.
        message = f"[red]error[/red] {escape(str(exc))}"
        Console(stderr=True).print(message, highlight=False, soft_wrap=True)
        sys.exit(2)
