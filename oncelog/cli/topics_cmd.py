"""``oncelog topics create | check``: the requests/executions pair."""

from __future__ import annotations

from typing import Annotated

import typer

from oncelog.broker.local import resolve_bootstrap
from oncelog.settings import Settings
from oncelog.topics import admin_client, check_topics, create_topics, ledger_topics

app = typer.Typer(no_args_is_help=True, help="Create and check the ledger's topics.")

Partitions = Annotated[
    int | None, typer.Option(min=1, help="Partition count (default ONCELOG_PARTITIONS).")
]


@app.command()
def create(partitions: Partitions = None) -> None:
    """Create the missing topics with the spec's configs, then check them."""
    settings = Settings()
    admin = admin_client(settings, resolve_bootstrap(settings))
    specs = ledger_topics(settings, partitions)
    created = create_topics(admin, specs)
    counts = check_topics(admin, specs)
    for spec in specs:
        verb = "created" if spec.name in created else "exists "
        typer.echo(f"{verb} {spec.name} ({counts[spec.name]} partitions)")


@app.command()
def check() -> None:
    """Validate an existing pair; exit 2 with the reasons when it is wrong."""
    settings = Settings()
    admin = admin_client(settings, resolve_bootstrap(settings))
    counts = check_topics(admin, ledger_topics(settings))
    typer.echo("ok " + " ".join(f"{name}={n}" for name, n in counts.items()))
