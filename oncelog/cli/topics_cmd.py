"""``oncelog topics create | check | acl``: the ledger's topics and their ACLs."""

from __future__ import annotations

import time
from typing import Annotated, Any

import typer
from confluent_kafka.admin import AdminClient

from oncelog.acls import Principals, acl_commands, apply_acls, ledger_acls
from oncelog.archive.retention import check_retention, retention_problems
from oncelog.broker.local import LocalBroker, resolve_bootstrap
from oncelog.errors import RetentionUnsafeError
from oncelog.settings import Settings
from oncelog.topics import (
    admin_client,
    check_topics,
    create_topics,
    describe_configs,
    ledger_topics,
    replication_factors,
    set_topic_configs,
)

app = typer.Typer(no_args_is_help=True, help="Create and check the ledger's topics and ACLs.")


def _as_admin(settings: Settings) -> Settings:
    """The settings to administer with: on the secure local broker, its admin user's.

    Configured SASL credentials (``ONCELOG_SASL_*``) or an external broker win.
    """
    if settings.bootstrap_servers is None and settings.sasl_username is None:
        broker = LocalBroker(settings)
        info = broker.status()
        if info is not None and info.secure:
            return broker.client_settings()
    return settings


def _admin(settings: Settings) -> AdminClient:
    """An admin client; on the secure local broker, logged in as its admin user."""
    settings = _as_admin(settings)
    return admin_client(settings, resolve_bootstrap(settings))


def _kafka(settings: Settings) -> dict[str, Any]:
    """The librdkafka settings of a reader, as :func:`_admin` logs in."""
    settings = _as_admin(settings)
    return settings.kafka_config(resolve_bootstrap(settings))


def _now_ms() -> int:
    return int(time.time() * 1000)


Partitions = Annotated[
    int | None, typer.Option(min=1, help="Partition count (default ONCELOG_PARTITIONS).")
]


ReplyPartitions = Annotated[
    int | None,
    typer.Option(
        min=1, help="Partition count of the decisions topic (default ONCELOG_REPLY_PARTITIONS)."
    ),
]


RetentionOption = Annotated[
    int | None,
    typer.Option(
        "--retention-ms",
        min=-1,
        help="How long the requests log keeps a record (-1: forever, the default). A finite "
        "one needs an archive (ONCELOG_ARCHIVE_URL) and is refused (retention_unsafe) when "
        "the archive lags the log by as much; set on an existing topic too.",
    ),
]


@app.command()
def create(
    partitions: Partitions = None,
    reply_partitions: ReplyPartitions = None,
    retention_ms: RetentionOption = None,
) -> None:
    """Create the missing topics with the spec's configs, then check them."""
    settings = Settings()
    admin = _admin(settings)
    if retention_ms is not None:
        check_retention(settings, _kafka(settings), retention_ms, _now_ms())
    specs = ledger_topics(settings, partitions, reply_partitions, retention_ms)
    created = create_topics(admin, specs, settings.replication_factor)
    if retention_ms is not None and settings.requests_topic not in created:
        set_topic_configs(admin, settings.requests_topic, {"retention.ms": str(retention_ms)})
    counts = check_topics(admin, specs, settings.replication_factor)
    factors = replication_factors(admin, [spec.name for spec in specs])
    for spec in specs:
        verb = "created" if spec.name in created else "exists "
        shape = f"{counts[spec.name]} partitions, replication factor {factors[spec.name]}"
        typer.echo(f"{verb} {spec.name} ({shape})")


@app.command()
def check() -> None:
    """Validate the topics; exit 2 with the reasons when they are wrong.

    The requests, executions and dead-letter topics must agree in partition count;
    the decisions topic (the reply partitions) may have any count. A requests log that
    ages out (retention.ms) fails with ``retention_unsafe`` when it would lose requests
    not archived yet: no archive configured, or one lagging by the retention or more.
    """
    settings = Settings()
    admin = _admin(settings)
    counts = check_topics(admin, ledger_topics(settings), settings.replication_factor)
    retention = int(describe_configs(admin, settings.requests_topic).get("retention.ms", "-1"))
    problems = retention_problems(settings, _kafka(settings), retention, _now_ms())
    if problems:
        raise RetentionUnsafeError("; ".join(problems))
    typer.echo("ok " + " ".join(f"{name}={n}" for name, n in counts.items()))


def _principal(role: str) -> typer.models.OptionInfo:
    option: typer.models.OptionInfo = typer.Option(f"--{role}", help=f"The {role}'s principal.")
    return option


@app.command()
def acl(
    apply: Annotated[
        bool, typer.Option("--apply", help="Create the ACLs on the broker (as an admin).")
    ] = False,
    worker: Annotated[str, _principal("worker")] = Principals.worker,
    projector: Annotated[str, _principal("projector")] = Principals.projector,
    auditor: Annotated[str, _principal("auditor")] = Principals.auditor,
) -> None:
    """Print the ACLs of the worker, projector and auditor as kafka-acls.sh commands.

    With ``--apply`` they are created on the broker first (as an admin: configured
    SASL credentials, or the secure local broker's admin user).
    """
    settings = Settings()
    grants = ledger_acls(settings, Principals(worker, projector, auditor))
    if apply:
        apply_acls(_admin(settings), grants)
    local = LocalBroker(settings).status() if settings.bootstrap_servers is None else None
    bootstrap = settings.bootstrap_servers or (local.bootstrap if local else "$BOOTSTRAP")
    for command in acl_commands(grants, bootstrap):
        typer.echo(command)
    if apply:
        typer.echo(f"applied {len(grants)} ACLs")
