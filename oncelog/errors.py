"""The one error hierarchy of oncelog.

Every error carries a stable, machine-readable ``code`` and an HTTP-style
``http_status``. Third-party errors are translated at adapter boundaries with
``raise ... from exc``.
"""

from __future__ import annotations

from typing import Any, ClassVar


class LedgerError(Exception):
    """Root of every error oncelog raises.

    A subclass gives its ``code`` and ``http_status`` as class keywords
    (``class ConflictError(LedgerError, code="conflict", http_status=409)``) and
    inherits what it does not give. A code names one error class: a second class
    declaring it (by keyword or by assignment) is refused at import.
    """

    code: ClassVar[str] = "ledger_error"
    http_status: ClassVar[int] = 500
    _declared: ClassVar[dict[str, str]] = {"ledger_error": f"{__name__}.LedgerError"}
    _classes: ClassVar[dict[str, type[LedgerError]]] = {}

    def __init_subclass__(
        cls, *, code: str | None = None, http_status: int | None = None, **kwargs: Any
    ) -> None:
        super().__init_subclass__(**kwargs)
        if code is not None:
            cls.code = code
        if http_status is not None:
            cls.http_status = http_status
        declared = cls.__dict__.get("code")
        if declared is not None:
            name = f"{cls.__module__}.{cls.__qualname__}"
            owner = LedgerError._declared.setdefault(declared, name)
            if owner != name:
                raise TypeError(f"error code {declared!r} is {owner}'s already")
            LedgerError._classes[declared] = cls

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"

    @staticmethod
    def class_of(code: str) -> type[LedgerError] | None:
        """The class that declared ``code`` (among the modules imported), or None."""
        if code == LedgerError.code:
            return LedgerError
        return LedgerError._classes.get(code)

    @classmethod
    def answered(cls, message: str) -> LedgerError:
        """An error of this class as an API answered it, from its message alone.

        A class whose constructor takes more than the message (the stored hash of a
        :class:`ConflictError`, say: the answer does not carry it) gives the nearest
        class above it whose constructor takes the message alone.
        """
        for kind in cls.__mro__:
            if issubclass(kind, LedgerError) and kind.__init__ is LedgerError.__init__:
                return kind(message)
        return LedgerError(message)  # unreachable: LedgerError itself qualifies


# --- configuration and environment -----------------------------------------


class ConfigError(LedgerError, code="config_error"):
    """Settings are missing, contradictory or invalid."""


class InvalidConfigurationError(ConfigError, ValueError, code="invalid_configuration"):
    """An ``ONCELOG_*`` setting holds a value it cannot take; the message names the variable
    and what it takes."""


class JavaNotFoundError(ConfigError, code="java_not_found"):
    """No Java runtime, or one too old for the pinned Kafka broker."""


class NativeCoreError(ConfigError, ImportError, code="native_core_unavailable"):
    """The Rust extension ``oncelog._native`` (the fold) is not built, or in a source checkout
    older than a file of its crate: ``make venv`` (or ``pip install .``, with cargo) builds it."""


class InsecureBindError(ConfigError, code="insecure_bind"):
    """The HTTP API was asked to bind a non-loopback address without a bearer token."""


class BrokerError(LedgerError, code="broker_error", http_status=503):
    """The local broker could not be fetched, started, reached or stopped."""


class BrokerUnreachableError(BrokerError, code="broker_unreachable"):
    """No broker answered at the configured address within the timeout.

    The message names the address tried; start a broker (``oncelog broker start``) or
    point ``ONCELOG_BOOTSTRAP_SERVERS`` at one that runs.
    """


class KafkaAuthenticationError(BrokerError, code="kafka_authentication_failed"):
    """The broker refused the SASL login (wrong user, password or mechanism).

    Check ``ONCELOG_SASL_USERNAME``, ``ONCELOG_SASL_PASSWORD`` and
    ``ONCELOG_SASL_MECHANISM``; the message never carries the password.
    """


class KafkaTlsError(BrokerError, code="kafka_tls_failed"):
    """The TLS handshake with the broker failed: its certificate is not trusted.

    Point ``ONCELOG_SSL_CA_LOCATION`` at the CA that signed the broker's certificate.
    """


class TopicConfigError(LedgerError, code="topic_config"):
    """A topic is missing or configured against the spec (e.g. requests compacts)."""


class KafkaOperationError(LedgerError, code="kafka_error", http_status=503):
    """A Kafka client call failed; the message names topic, partition and offset."""


class TopicMissingError(TopicConfigError, KafkaOperationError, code="topic_missing"):
    """A topic of the ledger does not exist: ``oncelog topics create`` makes them.

    Also a :class:`KafkaOperationError`, which is what a missing topic raised before.
    """


# --- input validation --------------------------------------------------------


class InvalidArgumentError(LedgerError, ValueError, code="invalid_argument", http_status=400):
    """A caller passed a wrong argument. Raised before anything is produced."""


class CanonicalJsonError(InvalidArgumentError, code="non_canonical_json"):
    """A value cannot be encoded as canonical JSON (NaN, non-string key, ...)."""


class CodecError(LedgerError, code="codec_error", http_status=422):
    """Bytes on a topic could not be decoded as an oncelog record."""

    def __init__(self, message: str, *, length: int, fingerprint: bytes | None) -> None:
        fp = fingerprint.hex() if fingerprint is not None else "none"
        super().__init__(f"{message} (length={length}, fingerprint={fp})")
        self.length = length
        self.fingerprint = fingerprint


# --- ledger outcomes that are errors for the caller --------------------------


class ConflictError(LedgerError, code="conflict", http_status=409):
    """Same operation, different content: never a second record."""

    def __init__(self, message: str, *, stored_hash: str, request_hash: str) -> None:
        super().__init__(f"{message} (stored={stored_hash}, requested={request_hash})")
        self.stored_hash = stored_hash
        self.request_hash = request_hash


class ForkConflictError(ConflictError, code="fork_conflict"):
    """A fork (or an adoption) met a key the child channel already decided otherwise.

    The child's own claim, failure, or another request or result is never overwritten:
    fork into a fresh channel, or fork before the child runs anything of its own.
    """


class ResultExpiredError(LedgerError, code="result_expired", http_status=409):
    """The result was purged after retention; the key stays claimed forever."""


class StaleClaimError(LedgerError, code="stale_claim", http_status=409):
    """The claim token is not (or no longer) the holder: fenced."""


class InProgressError(LedgerError, code="in_progress", http_status=409):
    """Another holder has a live lease on the operation."""


class ExecutionFailedError(LedgerError, code="execution_failed", http_status=409):
    """The operation failed for good (not retryable)."""


class ApprovalDeniedError(LedgerError, code="approval_denied", http_status=409):
    """An approver denied the operation's intent: terminal, the message carries the reason."""


class ApprovalExpiredError(LedgerError, code="approval_expired", http_status=409):
    """The operation's intent was not approved or denied by its deadline: terminal."""


class ApprovalRefusedError(LedgerError, code="approval_refused", http_status=403):
    """The requesting worker tried to approve its own intent, which its policy forbids."""


class ApprovalPendingError(LedgerError, code="approval_pending", http_status=409):
    """A tool's call awaits a person's approval: nothing ran. Raised by ``run_tool`` and the
    decorators at once (``RequireApproval(on_pending="raise")``) or when their bounded wait
    ends undecided; calling again after the decision runs the tool (approved) or raises
    :class:`ApprovalDeniedError`. Carries what an approver needs: the operation, the tool,
    the params, the request hash and the intent's deadline."""

    def __init__(
        self,
        message: str,
        *,
        execution_id: str,
        channel_id: str,
        key_name: str,
        tool_name: str,
        params: dict[str, Any],
        request_hash: str,
        deadline_ms: int | None,
    ) -> None:
        super().__init__(message)
        self.execution_id = execution_id
        self.channel_id = channel_id
        self.key_name = key_name
        self.tool_name = tool_name
        self.params = params
        self.request_hash = request_hash
        self.deadline_ms = deadline_ms


class LeaseLostError(LedgerError, code="lease_lost", http_status=409):
    """The holder's lease was lost or cancelled while the tool ran."""


class LedgerTimeoutError(LedgerError, TimeoutError, code="timeout", http_status=504):
    """A bounded wait (delivery or decision) ran out."""


class NoProjectorError(LedgerTimeoutError, code="no_projector"):
    """A call timed out although the broker acknowledged its request, and no decision at
    all arrived meanwhile: no projector folds the requests topic (``oncelog serve``)."""


class NotFoundError(LedgerError, code="not_found", http_status=404):
    """The queried execution or step is unknown."""


class ReceiptError(LedgerError, code="invalid_receipt", http_status=401):
    """A receipt is malformed, forged, altered, expired or signed with another key."""


class UnauthorizedError(LedgerError, code="unauthorized", http_status=401):
    """The HTTP API was called without its bearer token, or with a wrong one."""


# --- the HTTP write API's idempotency keys (IETF httpapi-idempotency-key-header) ------


class IdempotencyKeyReusedError(LedgerError, code="idempotency_key_reused", http_status=422):
    """An ``Idempotency-Key`` came back with another route or payload than its first use."""


class RequestInFlightError(LedgerError, code="request_in_flight", http_status=409):
    """A request with this ``Idempotency-Key`` is still waiting for its decision."""


class InvalidRequestError(LedgerError, code="invalid_request", http_status=422):
    """A record on the requests topic decoded, but holds impossible values."""


class InvalidStateError(LedgerError, code="invalid_state", http_status=409):
    """The request does not apply to the operation's current state (e.g. absent)."""

    def __init__(self, message: str, *, state: str) -> None:
        super().__init__(message)
        self.state = state


# --- queries through any instance -------------------------------------------


class OwnerUnavailableError(LedgerError, code="owner_unavailable", http_status=503):
    """The group member that owns a partition (or one asked in a gather) did not answer.

    The message names the member: its projector id and its query URL.
    """


class NoOwnerError(LedgerError, code="no_owner", http_status=503):
    """No member of the projector group owns the partition asked about (yet)."""


# --- the DuckDB projection ---------------------------------------------------


class StoreError(LedgerError, code="store_error", http_status=503):
    """The DuckDB projection could not be read or written; a failed write changed nothing."""


class VerifyIncompleteError(LedgerError, code="verify_incomplete"):
    """``oncelog verify`` could not make a comparison it was asked for (say, the live
    DuckDB file is locked by a running ``oncelog serve``); it checked nothing."""


class HistoryIncompleteError(LedgerError, code="history_incomplete"):
    """A DuckDB file lacks requests or versions the requests topic still has (say, it was
    restored from the executions topic): its timelines and audit would answer without
    them. ``oncelog serve`` on the file refolds them before it folds on."""


class DiskFullError(StoreError, code="disk_full", http_status=507):
    """The DuckDB file's volume is full: the projector stops. Nothing acknowledged is lost
    (it is on the log); started again once there is space, it resumes from its last commit."""


# --- the archive of the requests log (docs/guides/retention.md) ------------------


class ArchiveError(LedgerError, code="archive_error", http_status=503):
    """The archive location (``ONCELOG_ARCHIVE_URL``) could not be read or written, or is
    not configured; nothing half-written is visible there, and a re-run resumes."""


class ArchiveCorruptError(ArchiveError, code="archive_corrupt", http_status=500):
    """An archived file is missing, or its bytes, records or offsets differ from what the
    archive's manifest says; the message names the file. Nothing is trimmed behind it."""


class RetentionUnsafeError(TopicConfigError, code="retention_unsafe"):
    """A retention, a trim or the log as it stands would drop requests that the archive
    does not hold yet; the message names the partitions and offsets, or how far behind the
    archive is."""


# --- the tool executor -------------------------------------------------------


class ToolInProgressError(InProgressError):
    """``run_tool`` found another holder with a live lease (code ``in_progress``)."""

    def __init__(
        self, message: str, *, execution_id: str, holder: str | None, lease_deadline_ms: int | None
    ) -> None:
        super().__init__(f"{message} (holder={holder}, lease_deadline_ms={lease_deadline_ms})")
        self.execution_id = execution_id
        self.holder = holder
        self.lease_deadline_ms = lease_deadline_ms


class ExecutionCancelledError(LeaseLostError, code="cancelled"):
    """A cancel was requested while the tool ran; the tool call was stopped."""

    def __init__(self, message: str, *, reason: str | None) -> None:
        super().__init__(f"{message} (reason={reason})")
        self.reason = reason


class ResultUnrecordableError(ExecutionFailedError, code="result_unrecordable"):
    """The tool ran (its effect happened) but its result cannot be recorded: not canonical
    JSON, over 1 MiB, or a ``result_encoder`` that raised. The operation is recorded as failed
    for good, with this code, the reason and a digest, so a retry answers this error and never
    runs the tool again; pass ``result_encoder=oncelog.jsonable`` (datetimes, decimals, models)
    or return less, and use another key to run it again (docs/spec.md §5)."""

    PREFIX: ClassVar[str] = "result_unrecordable: "
    """How a recorded failure's text begins (what a replay and the audit recognise)."""

    @classmethod
    def is_recorded(cls, error_text: str | None) -> bool:
        """Whether a recorded failure's text is an unrecordable result's."""
        return error_text is not None and error_text.startswith(cls.PREFIX)


# --- Kafka authorization -----------------------------------------------------


class NotAuthorizedError(KafkaOperationError, code="not_authorized", http_status=403):
    """The broker's ACLs deny this principal the operation; the message names the topic."""

    def __init__(self, message: str, *, topic: str) -> None:
        super().__init__(message)
        self.topic = topic


class CheckpointTooLargeError(InvalidArgumentError, code="checkpoint_too_large", http_status=413):
    """A checkpoint value (or its metadata) over the saver's documented limit; nothing was
    written (docs/langgraph.md, "Limits")."""


class CheckpointsRedactedError(LedgerError, code="checkpoints_redacted", http_status=403):
    """A checkpoint read from an API that redacts results: a checkpoint's state holds them."""


class ServeUnreachableError(LedgerError, code="serve_unreachable", http_status=503):
    """No ``oncelog serve`` answered at the query URL a client was given."""
