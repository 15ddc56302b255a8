"""``oncelog broker start | stop | status``: the embedded local Kafka broker."""

from __future__ import annotations

import typer

from oncelog.broker.jars import ensure_jars
from oncelog.broker.local import LocalBroker
from oncelog.settings import Settings

app = typer.Typer(no_args_is_help=True, help="Run the embedded single-node KRaft broker.")


@app.command()
def start() -> None:
    """Start the local broker (or reuse the running one) and print its address."""
    settings = Settings()
    if settings.bootstrap_servers:
        typer.echo(f"using external broker {settings.bootstrap_servers}; nothing started")
        return
    info = LocalBroker(settings).start()
    typer.echo(f"{info.bootstrap} (pid {info.pid}, ready in {info.started_in_s:.1f}s)")


@app.command()
def status() -> None:
    """Print the bootstrap address of the running broker; exit 1 when none runs."""
    settings = Settings()
    if settings.bootstrap_servers:
        typer.echo(settings.bootstrap_servers)
        return
    info = LocalBroker(settings).status()
    if info is None:
        typer.echo("not running")
        raise typer.Exit(1)
    typer.echo(info.bootstrap)


@app.command()
def stop() -> None:
    """Stop the local broker: SIGTERM, a bounded wait, then SIGKILL."""
    stopped = LocalBroker(Settings()).stop()
    typer.echo("stopped" if stopped else "not running")


@app.command()
def fetch() -> None:
    """Resolve the broker's jars from Maven Central into the cache (no-op when cached)."""
    settings = Settings()
    typer.echo(str(ensure_jars(settings.cache_dir)))
