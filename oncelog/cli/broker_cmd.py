"""``oncelog broker start | stop | status``: the embedded local Kafka broker."""

from __future__ import annotations

import shlex
from typing import Annotated

import typer

from oncelog.broker.cluster import ClusterInfo, LocalCluster
from oncelog.broker.jars import ensure_jars
from oncelog.broker.local import LocalBroker
from oncelog.broker.secure import CREDENTIALS_FILE, USERS
from oncelog.errors import BrokerError
from oncelog.settings import Settings

app = typer.Typer(
    no_args_is_help=True,
    help="Run the embedded KRaft broker (one node), or a local cluster (--nodes 3).",
)


Secure = Annotated[
    bool,
    typer.Option(
        "--secure",
        help="SASL_SSL: SCRAM-SHA-512 users (admin, worker, projector, auditor) over TLS with a "
        "CA of its own, and the KRaft authorizer: "
        "nothing is allowed without an ACL (`oncelog topics acl --apply`).",
    ),
]


Nodes = Annotated[
    int,
    typer.Option(
        "--nodes",
        min=1,
        help="1: the single broker. 3 (or more): a local KRaft cluster of combined "
        "broker+controller nodes; `topics create` then makes 3 replicas, min.insync.replicas=2.",
    ),
]


@app.command()
def start(secure: Secure = False, nodes: Nodes = 1) -> None:
    """Start the local broker or cluster (or reuse the running one) and print its address."""
    settings = Settings()
    if settings.bootstrap_servers:
        typer.echo(f"using external broker {settings.bootstrap_servers}; nothing started")
        return
    if nodes > 1:
        _start_cluster(settings, nodes, secure)
        return
    broker = LocalBroker(settings, secure=secure)
    info = broker.start()
    typer.echo(f"{info.bootstrap} (pid {info.pid}, ready in {info.started_in_s:.1f}s)")
    if secure:
        typer.echo(
            f"SASL_SSL/SCRAM-SHA-512 users {', '.join(USERS)}; passwords in "
            f"{broker.dir / CREDENTIALS_FILE} (mode 0600); TLS CA {broker.ca}.\n"
            '`eval "$(oncelog broker env worker)"` logs a shell in as the worker.'
        )


def _start_cluster(settings: Settings, nodes: int, secure: bool) -> None:
    single = LocalBroker(settings).status()
    if single is not None:
        raise BrokerError(
            f"the single local broker runs at {single.bootstrap}; stop it first "
            "(`oncelog broker stop`)"
        )
    cluster = LocalCluster(settings, nodes=nodes, secure=secure)
    info = cluster.start()
    typer.echo(f"{info.bootstrap} ({nodes} nodes, ready in {info.started_in_s:.1f}s)")
    _echo_nodes(info)
    if cluster.secure:
        typer.echo(
            f"SASL_SSL/SCRAM-SHA-512 users {', '.join(USERS)}; passwords in "
            f"{cluster.dir / CREDENTIALS_FILE} (mode 0600); TLS CA {cluster.dir / 'tls/ca.pem'}."
        )


def _echo_nodes(info: ClusterInfo) -> None:
    for node in info.nodes:
        state = f"pid {node.pid}" if node.pid is not None else "stopped"
        typer.echo(f"  node {node.node_id} {node.address} ({state})")


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
        "ONCELOG_SSL_CA_LOCATION": client.ssl_ca_location,
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
    cluster = LocalCluster(settings).status()
    if info is None and cluster is not None:
        typer.echo(f"{cluster.bootstrap} ({len(cluster.running)} of {len(cluster.nodes)} running)")
        _echo_nodes(cluster)
        return
    if info is None:
        typer.echo("not running")
        raise typer.Exit(1)
    typer.echo(f"{info.bootstrap} (secure)" if info.secure else info.bootstrap)


@app.command()
def stop() -> None:
    """Stop the local broker and the local cluster: SIGTERM, a bounded wait, then SIGKILL."""
    settings = Settings()
    stopped = LocalBroker(settings).stop()
    stopped = LocalCluster(settings).stop() or stopped
    typer.echo("stopped" if stopped else "not running")


@app.command()
def fetch() -> None:
    """Resolve the broker's jars from Maven Central into the cache (no-op when cached)."""
    settings = Settings()
    typer.echo(str(ensure_jars(settings.cache_dir)))
