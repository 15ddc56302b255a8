"""Frozen settings, read once at the edge from ``ONCELOG_*`` variables and flags."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Final, overload

from pydantic import Field, SecretStr, ValidationError
from pydantic_settings import SettingsConfigDict, SettingsError

from oncelog import settings_env
from oncelog.settings_approvals import ApprovalSettings

#: How every client of the ledger (SDK, projector, admin) meets a bad network: chosen with
#: the network drill (``python -m drills.faults network``; docs/reliability.md, "Network
#: faults", has the figures). ``ONCELOG_KAFKA_EXTRA_CONFIG`` may override each.
KAFKA_NETWORK_CONFIG: Mapping[str, Any] = {
    # A request unanswered for this long fails, and its connection is closed and opened
    # again (socket.max.fails=1): a half-open connection, one that accepts and never
    # answers, costs 10 s instead of librdkafka's default 60 s.
    "socket.timeout.ms": 10_000,
    # The same bound on a new connection's TCP and API-version handshake (default 30 s).
    "socket.connection.setup.timeout.ms": 10_000,
    # The kernel's keepalive probes on idle connections: a peer that vanished without a
    # FIN or RST (a dropped NAT entry, a dead host) is found on a connection nobody uses.
    "socket.keepalive.enable": True,
    # After a cut heals, a client tries again within a second (default up to 10 s);
    # one attempt a second per broker is no load on a broker.
    "reconnect.backoff.ms": 100,
    "reconnect.backoff.max.ms": 1_000,
}


def _default_cache_dir() -> Path:
    return Path.home() / ".cache" / "oncelog"


def _default_data_dir() -> Path:
    return Path.home() / ".local" / "share" / "oncelog"


def _default_db_path(data: dict[str, Any]) -> Path:
    """One absolute file per data directory and topic prefix: ``serve`` started from
    any folder finds the same projection (docs/spec.md §9)."""
    data_dir = Path(data.get("data_dir") or _default_data_dir())
    prefix = data.get("topic_prefix") or "oncelog"
    return data_dir.expanduser().absolute() / "ledgers" / f"{prefix}.duckdb"


class _TopicName:
    """The name of one of the ledger's topics: ``ONCELOG_TOPIC_PREFIX``, a dot, its role.

    Read on a :class:`Settings` (``settings.requests_topic``), the one naming rule
    of the five topics; read on the class, the descriptor itself (for its doc).
    """

    def __init__(self, role: str, doc: str) -> None:
        self.role = role
        self.__doc__ = doc

    @overload
    def __get__(self, settings: None, owner: type[Settings]) -> _TopicName: ...
    @overload
    def __get__(self, settings: Settings, owner: type[Settings]) -> str: ...
    def __get__(self, settings: Settings | None, owner: type[Settings]) -> _TopicName | str:
        return self if settings is None else f"{settings.topic_prefix}.{self.role}"


#: The descriptions of the archive's settings (docs/guides/retention.md), kept out of the
#: class's body so that it stays readable.
_ARCHIVE: Final = {
    "url": "Where `oncelog archive` writes the requests log as Parquet: a directory, or "
    "s3://bucket/prefix on an S3-compatible store (docs/guides/retention.md). Unset: no "
    "archive, and the requests topic keeps every record.",
    "endpoint": "The S3-compatible endpoint of an s3:// archive (http://host:port). Unset: AWS S3.",
    "region": "The s3:// archive's region.",
    "key": "The s3:// archive's access key id.",
    "secret": "The s3:// archive's secret access key.",
    "records": "Requests per archived Parquet file at most; `oncelog archive run` writes a "
    "smaller one only for the records older than ONCELOG_ARCHIVE_MAX_AGE_S, or at --once.",
    "age": "How old a request may get before `oncelog archive run` writes it in a file "
    "smaller than ONCELOG_ARCHIVE_FILE_RECORDS: the archive's lag, at most, when idle.",
    "history_age": "How long (by log time) the DuckDB `history` and `requests` tables keep a "
    "row; `oncelog serve` (or `oncelog archive prune`) moves older rows the archive covers to "
    "Parquet beside it. Unset: no age limit.",
    "history_versions": "How many versions of each operation `history` keeps (the current one "
    "always); `oncelog serve` (or `oncelog archive prune`) moves older ones the archive covers "
    "to Parquet. Unset: no limit.",
    "history_prune": "Seconds between two prunes of the DuckDB history by `oncelog serve`, when "
    "a window (ONCELOG_HISTORY_MAX_AGE_S or _MAX_VERSIONS) and a local ONCELOG_ARCHIVE_URL "
    "are set: each runs after a commit, in the thread that commits.",
}


#: The descriptions of `oncelog serve`'s DuckDB and memory settings, out of the class's body
#: for the same reason.
_SERVE: Final = {
    "threads": "DuckDB worker threads of `oncelog serve`'s file. Its commits insert "
    "batches of a second's records, where one thread used 10-19 % less CPU than "
    "DuckDB's default of one per core (docs/performance.md); raise it for heavy "
    "analytical queries through the API.",
    "checkpoint_mb": "Write-ahead log size (MiB) at which `oncelog serve`'s DuckDB file is "
    "checkpointed. Until then DuckDB keeps every row the log holds in memory, about "
    "1.2 times its size (docs/reliability.md, the soak), and replays the log after a "
    "crash (about 1 s per 200 MB); DuckDB's default of 16 made checkpoints most of a "
    "commit's CPU (docs/performance.md).",
    "checkpoint_interval": "`oncelog serve` also checkpoints its DuckDB file this long after the "
    "last timed one (unset: only by the log's size): under a light load the log would "
    "take hours to reach ONCELOG_DUCKDB_CHECKPOINT_MB, its rows held in memory all along.",
    "memory_limit": "DuckDB's memory limit (MiB) for `oncelog serve`'s file. Unset: DuckDB's "
    "default, 80 % of the machine's memory. Cached blocks and rows not yet checkpointed "
    "are evicted or spilled beside the file under it, but the indexes must fit: about "
    "0.4 KB per operation (docs/reliability.md, the soak); at the limit a commit fails "
    "and the file must be reopened.",
    "max_states": "Operation states `oncelog serve`'s projector keeps in memory, the most "
    "recently used (one unused for 5 minutes goes too); an evicted one is read back "
    "from DuckDB when a request names it (the decision is the same). Each costs about "
    "2 KB.",
}


class Settings(ApprovalSettings):
    """All configuration of oncelog. Build it once and pass it down."""

    model_config = SettingsConfigDict(env_prefix="ONCELOG_", frozen=True, extra="ignore")

    def __init__(self, **values: Any) -> None:
        """Read ``values``, then the ``ONCELOG_*`` variables.

        Raises:
            InvalidConfigurationError: a value a setting cannot take (it names the variable).

        An ``ONCELOG_*`` variable that no setting reads is warned about
        (:class:`~oncelog.settings_env.UnknownSettingWarning`), naming the nearest setting.
        """
        fields = type(self).model_fields
        settings_env.warn_unknown(os.environ, (f"ONCELOG_{name.upper()}" for name in fields))
        try:
            super().__init__(**values)
        except (ValidationError, SettingsError) as exc:
            secret = frozenset(n for n, f in fields.items() if "SecretStr" in str(f.annotation))
            raise settings_env.invalid_configuration(exc, secret) from None

    bootstrap_servers: str | None = Field(
        default=None,
        description="An external broker. When unset, the local embedded broker is used.",
    )
    topic_prefix: str = Field(
        default="oncelog",
        description="The ledger's five topics are <prefix>.requests, .executions, .decisions, "
        ".deadletter and .checkpoints: another prefix runs another ledger on the same cluster.",
    )
    partitions: int = Field(
        default=6,
        ge=1,
        le=1024,
        description="Partitions of the requests, executions and dead-letter topics that "
        "`oncelog topics create` makes; a channel's requests all go to one of them.",
    )
    max_clock_step_ms: int = Field(
        default=0,
        ge=0,
        le=24 * 3600 * 1000,
        description="The largest step of a leader broker's clock the ledger rides out "
        '(docs/spec.md §4, "Clock steps"): a lapsed lease that was not released is '
        "reclaimed only once it lapsed by this much more. 0: at the deadline. A constant of "
        "the ledger: every projector and rebuild of it must use the same value.",
    )
    reply_partitions: int = Field(
        default=32,
        ge=1,
        le=1024,
        description="Partitions of the decisions topic (may differ from ONCELOG_PARTITIONS). "
        "Each client reads one; 32 lets up to 32 busy clients each read only their own "
        "answers, at little cost to a broker.",
    )
    reply_partition: int | None = Field(
        default=None,
        ge=0,
        description="Pin this client's reply partition. Unset: at start the client picks, "
        "at random, one of the partitions that had the fewest decisions lately.",
    )
    replication_factor: int | None = Field(
        default=None,
        ge=1,
        description="Replicas of each topic `oncelog topics create` makes. Unset: 3 (with "
        "min.insync.replicas=2) on a cluster of three brokers or more, else 1.",
    )
    duckdb_threads: int = Field(default=1, ge=1, description=_SERVE["threads"])
    duckdb_checkpoint_mb: int = Field(default=32, ge=1, description=_SERVE["checkpoint_mb"])
    duckdb_checkpoint_interval_s: float | None = Field(
        default=300.0, gt=0, description=_SERVE["checkpoint_interval"]
    )
    duckdb_memory_limit_mb: int | None = Field(
        default=None, ge=64, description=_SERVE["memory_limit"]
    )
    projector_max_states: int = Field(default=20_000, ge=100, description=_SERVE["max_states"])
    http_host: str = Field(
        default="127.0.0.1",
        description="Where `oncelog serve` binds its HTTP API, and where the CLI asks it. "
        "Any address off loopback needs ONCELOG_HTTP_TOKEN.",
    )
    http_port: int = Field(
        default=8765, ge=0, le=65535, description="The HTTP API's port (0: any free port)."
    )
    http_token: SecretStr | None = Field(
        default=None,
        min_length=1,
        description="Bearer token of the HTTP API. Unset: it serves on loopback only.",
    )
    http_write_token: SecretStr | None = Field(
        default=None,
        min_length=1,
        description="Bearer token of the HTTP write API (claim, complete, heartbeat, fail, "
        "release, cancel; docs/http-api.md), distinct from ONCELOG_HTTP_TOKEN. Unset: the "
        "write routes are off.",
    )
    http_claim_key: SecretStr | None = Field(
        default=None,
        min_length=16,
        description="Key from which the write API derives the claim token of a claim sent "
        "with an Idempotency-Key, so that a retried claim is the same request. Give every "
        "`serve` of a group the same key; unset: a random key per `serve` process, or per "
        "`oncelog gateway` (its workers share it): a retry must then reach the same one.",
    )
    http_redact_results: bool = Field(
        default=False,
        description="Leave result bodies out of HTTP answers (result_hash stays).",
    )
    http_advertised_url: str | None = Field(
        default=None,
        pattern=r"^https?://[^/?#]+$",
        description="The query URL other instances of the group forward to. Unset: "
        "http://<ONCELOG_HTTP_HOST or, for a wildcard, the host name>:<bound port>.",
    )
    http_forward_timeout_s: float = Field(
        default=3.0,
        gt=0,
        description="How long an instance waits for the member it forwards a query to.",
    )
    trace_payloads: bool = Field(
        default=False,
        description="Put params and results on the SDK's OpenTelemetry spans. Off: ids, "
        "outcomes and positions only (docs/tracing.md).",
    )
    receipt_key: SecretStr | None = Field(
        default=None, description="The HMAC-SHA256 key that signs and checks receipts."
    )
    projector_id: str = Field(
        default="projector-0",
        description="Static group membership id: a restarted projector takes its place at once.",
    )
    connect_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="How long a client (the SDK, the write API) waits for the broker's first "
        "answer before it fails with broker_unreachable (Timeouts.connect_s when none is given).",
    )
    group_session_timeout_ms: int = Field(
        default=10000,
        ge=1,
        description="How long the projectors' group waits for a silent member before its "
        "partitions go to the others (the broker bounds it: group.min.session.timeout.ms).",
    )

    cache_dir: Path = Field(
        default_factory=_default_cache_dir,
        description="Where the embedded broker's jars are cached (fetched once from Maven).",
    )
    data_dir: Path = Field(
        default_factory=_default_data_dir,
        description="The embedded broker's data, configuration, log and pid files, and "
        "the default DuckDB files (ONCELOG_DB_PATH).",
    )
    # After data_dir and topic_prefix: its default is computed from them.
    db_path: Path = Field(
        default_factory=_default_db_path,
        description="The DuckDB file `oncelog serve` folds into (one writer process at a "
        "time), and that the CLI's read commands open offline. Unset: "
        "<ONCELOG_DATA_DIR>/ledgers/<ONCELOG_TOPIC_PREFIX>.duckdb, the same file from "
        "any folder.",
    )
    java_home: Path | None = Field(
        default=None,
        description="The JDK (17 or newer) the embedded broker runs on. Unset: the `java` "
        "on the PATH.",
    )
    broker_heap: str = Field(default="512m", description="The embedded broker's JVM heap.")
    broker_start_timeout_s: float = Field(
        default=60.0,
        gt=0,
        description="How long `oncelog broker start` waits for the broker to answer.",
    )
    broker_passwords: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="SASL passwords of the secure local broker's users (JSON); others are "
        "generated at each `oncelog broker start --secure`.",
    )

    security_protocol: str | None = Field(
        default=None, description="librdkafka's security.protocol (SASL_SSL on a real cluster)."
    )
    sasl_mechanism: str | None = Field(
        default=None, description="librdkafka's sasl.mechanism (SCRAM-SHA-512, PLAIN, ...)."
    )
    sasl_username: str | None = Field(default=None, description="The SASL user.")
    sasl_password: SecretStr | None = Field(default=None, description="The SASL password.")
    ssl_ca_location: str | None = Field(
        default=None, description="The CA certificate file that signs the brokers' TLS."
    )
    kafka_extra_config: dict[str, Any] = Field(
        default_factory=dict,
        description="Any other librdkafka setting, for every client (JSON). The producers' "
        "acks=all and enable.idempotence=true cannot be weakened (config_error).",
    )

    archive_url: str | None = Field(default=None, description=_ARCHIVE["url"])
    archive_s3_endpoint: str | None = Field(default=None, description=_ARCHIVE["endpoint"])
    archive_s3_region: str = Field(default="us-east-1", description=_ARCHIVE["region"])
    archive_s3_access_key: str | None = Field(default=None, description=_ARCHIVE["key"])
    archive_s3_secret_key: SecretStr | None = Field(default=None, description=_ARCHIVE["secret"])
    archive_file_records: int = Field(default=100_000, ge=1, description=_ARCHIVE["records"])
    archive_max_age_s: float = Field(default=300.0, gt=0, description=_ARCHIVE["age"])
    history_max_age_s: float | None = Field(default=None, gt=0, description=_ARCHIVE["history_age"])
    history_max_versions: int | None = Field(
        default=None, ge=1, description=_ARCHIVE["history_versions"]
    )
    history_prune_interval_s: float = Field(
        default=60.0, gt=0, description=_ARCHIVE["history_prune"]
    )

    def kafka_config(self, bootstrap: str) -> dict[str, Any]:
        """librdkafka settings shared by every client: bootstrap, network behaviour
        (:data:`KAFKA_NETWORK_CONFIG`), SASL/TLS, passthrough."""
        conf: dict[str, Any] = {"bootstrap.servers": bootstrap, **KAFKA_NETWORK_CONFIG}
        optional = {
            "security.protocol": self.security_protocol,
            "sasl.mechanism": self.sasl_mechanism,
            "sasl.username": self.sasl_username,
            "ssl.ca.location": self.ssl_ca_location,
        }
        conf.update({k: v for k, v in optional.items() if v is not None})
        if self.sasl_password is not None:
            conf["sasl.password"] = self.sasl_password.get_secret_value()
        conf.update(self.kafka_extra_config)
        return conf

    requests_topic: ClassVar[_TopicName] = _TopicName(
        "requests", "The append-only audit log of every request."
    )
    executions_topic: ClassVar[_TopicName] = _TopicName(
        "executions", "The compacted topic of full execution snapshots."
    )
    decisions_topic: ClassVar[_TopicName] = _TopicName(
        "decisions", "One decision per request, read by the client that sent it."
    )
    deadletter_topic: ClassVar[_TopicName] = _TopicName(
        "deadletter", "Where undecodable records go, with their source position."
    )
    checkpoints_topic: ClassVar[_TopicName] = _TopicName(
        "checkpoints",
        "The compacted topic of LangGraph checkpoints (oncelog.integrations.langgraph).",
    )
