"""The one error hierarchy of oncelog.

Every error carries a stable, machine-readable ``code`` and an HTTP-style
``http_status``. Third-party errors are translated at adapter boundaries with
``raise ... from exc``.
"""

from __future__ import annotations

from typing import ClassVar


class LedgerError(Exception):
    """Root of every error oncelog raises."""

    code: ClassVar[str] = "ledger_error"
    http_status: ClassVar[int] = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"[{self.code}] {self.message}"


# --- configuration and environment -----------------------------------------


class ConfigError(LedgerError):
    """Settings are missing, contradictory or invalid."""

    code = "config_error"


class JavaNotFoundError(ConfigError):
    """No Java runtime, or one too old for the pinned Kafka broker."""

    code = "java_not_found"


class InsecureBindError(ConfigError):
    """The HTTP API was asked to bind a non-loopback address without a bearer token."""

    code = "insecure_bind"


class BrokerError(LedgerError):
    """The local broker could not be fetched, started, reached or stopped."""

    code = "broker_error"
    http_status = 503


class TopicConfigError(LedgerError):
    """A topic is missing or configured against the spec (e.g. requests compacts)."""

    code = "topic_config"


class KafkaOperationError(LedgerError):
    """A Kafka client call failed; the message names topic, partition and offset."""

    code = "kafka_error"
    http_status = 503


# --- input validation --------------------------------------------------------


class InvalidArgumentError(LedgerError, ValueError):
    """A caller passed a wrong argument. Raised before anything is produced."""

    code = "invalid_argument"
    http_status = 400


class CanonicalJsonError(InvalidArgumentError):
    """A value cannot be encoded as canonical JSON (NaN, non-string key, ...)."""

    code = "non_canonical_json"


class CodecError(LedgerError):
    """Bytes on a topic could not be decoded as an oncelog record."""

    code = "codec_error"
    http_status = 422

    def __init__(self, message: str, *, length: int, fingerprint: bytes | None) -> None:
        fp = fingerprint.hex() if fingerprint is not None else "none"
        super().__init__(f"{message} (length={length}, fingerprint={fp})")
        self.length = length
        self.fingerprint = fingerprint


# --- ledger outcomes that are errors for the caller --------------------------


class ConflictError(LedgerError):
    """Same operation, different content: never a second record."""

    code = "conflict"
    http_status = 409

    def __init__(self, message: str, *, stored_hash: str, request_hash: str) -> None:
        super().__init__(f"{message} (stored={stored_hash}, requested={request_hash})")
        self.stored_hash = stored_hash
        self.request_hash = request_hash


class ResultExpiredError(LedgerError):
    """The result was purged after retention; the key stays claimed forever."""

    code = "result_expired"
    http_status = 409


class StaleClaimError(LedgerError):
    """The claim token is not (or no longer) the holder: fenced."""

    code = "stale_claim"
    http_status = 409


class InProgressError(LedgerError):
    """Another holder has a live lease on the operation."""

    code = "in_progress"
    http_status = 409


class ExecutionFailedError(LedgerError):
    """The operation failed for good (not retryable)."""

    code = "execution_failed"
    http_status = 409


class LeaseLostError(LedgerError):
    """The holder's lease was lost or cancelled while the tool ran."""

    code = "lease_lost"
    http_status = 409


class LedgerTimeoutError(LedgerError, TimeoutError):
    """A bounded wait (delivery or decision) ran out."""

    code = "timeout"
    http_status = 504


class NotFoundError(LedgerError):
    """The queried execution or step is unknown."""

    code = "not_found"
    http_status = 404


class ReceiptError(LedgerError):
    """A receipt is malformed, forged, altered, expired or signed with another key."""

    code = "invalid_receipt"
    http_status = 401


class UnauthorizedError(LedgerError):
    """The HTTP API was called without its bearer token, or with a wrong one."""

    code = "unauthorized"
    http_status = 401


class InvalidRequestError(LedgerError):
    """A record on the requests topic decoded, but holds impossible values."""

    code = "invalid_request"
    http_status = 422


class InvalidStateError(LedgerError):
    """The request does not apply to the operation's current state (e.g. absent)."""

    code = "invalid_state"
    http_status = 409

    def __init__(self, message: str, *, state: str) -> None:
        super().__init__(message)
        self.state = state


# --- queries through any instance -------------------------------------------


class OwnerUnavailableError(LedgerError):
    """The group member that owns a partition (or one asked in a gather) did not answer.

    The message names the member: its projector id and its query URL.
    """

    code = "owner_unavailable"
    http_status = 503


class NoOwnerError(LedgerError):
    """No member of the projector group owns the partition asked about (yet)."""

    code = "no_owner"
    http_status = 503


# --- the DuckDB projection ---------------------------------------------------


class StoreError(LedgerError):
    """The DuckDB projection could not be read or written; a failed write changed nothing."""

    code = "store_error"
    http_status = 503


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


class ExecutionCancelledError(LeaseLostError):
    """A cancel was requested while the tool ran; the tool call was stopped."""

    code = "cancelled"

    def __init__(self, message: str, *, reason: str | None) -> None:
        super().__init__(f"{message} (reason={reason})")
        self.reason = reason


# --- Kafka authorization -----------------------------------------------------


class NotAuthorizedError(KafkaOperationError):
    """The broker's ACLs deny this principal the operation; the message names the topic."""

    code = "not_authorized"
    http_status = 403

    def __init__(self, message: str, *, topic: str) -> None:
        super().__init__(message)
        self.topic = topic
