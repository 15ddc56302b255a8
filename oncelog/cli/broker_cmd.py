"""``oncelog broker start | stop | status``: the embedded local Kafka broker."""

from __future__ import annotations

import shlex
from typing import Annotated

import typer

from oncelog.broker.jars import ensure_jars
from oncelog.broker.local import LocalBroker
from oncelog.broker.secure import CREDENTIALS_FILE, USERS
from oncelog.settings import Settings

app = typer.Typer(no_args_is_help=True, help="Run the embedded single-node KRaft broker.")


Secure = Annotated[
    bool,
    typer.Option(
        "--secure",
        help="SASL/PLAIN users (admin, worker, projector, auditor) and the KRaft authorizer: "
        "nothing is allowed without an ACL (`oncelog topics acl --apply`).",
    ),
]


@app.command()
def start(secure: Secure = False) -> None:
    """Start the local broker (or reuse the running one) and print its address."""
    settings = Settings()
    if settings.bootstrap_servers:
        typer.echo(f"using external broker {settings.bootstrap_servers}; nothing started")
        return
    broker = LocalBroker(settings, secure=secure)
    info = broker.start()
    typer.echo(f"{info.bootstrap} (pid {info.pid}, ready in {info.started_in_s:.1f}s)")
    if secure:
        typer.echo(
            f"SASL_PLAINTEXT/PLAIN users {', '.join(USERS)}; passwords in "
            f"{broker.dir / CREDENTIALS_FILE} (mode 0600).\n"
            '`eval "$(oncelog broker env worker)"` logs a shell in as the worker.'
        )


@app.command()
def env(user: Annotated[str, typer.Argument(help=f"One of {', '.join(USERS)}.")]) -> None:
    """Print the ONCELOG_* variables (password included) that log USER in on the secure broker."""
    client = LocalBroker(Settings()).client_settings(user)
    password = client.sasl_password.get_secret_value() if client.sasl_password else ""
    variables = {
        "ONCELOG_BOOTSTRAP_SERVERS": client.bootstrap_servers,
        "ONCELOG_SECURITY_PROTOCOL": client.security_protocol,
        "ONCELOG_SASL_MECHANISM": client.sasl_mechanism,
        "ONCELOG_SASL_USERNAME": client.sasl_username,
        "ONCELOG_SASL_PASSWORD": password,
    }
    for name, value in variables.items():
        typer.echo(f"export {name}={shlex.quote(value or '')}")


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
    typer.echo(f"{info.bootstrap} (secure)" if info.secure else info.bootstrap)


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
