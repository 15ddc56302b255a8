"""The typed errors the SDK raises: each class's stable code and HTTP status."""

from __future__ import annotations

import pytest

from oncelog import errors
from oncelog.errors import InvalidArgumentError, LedgerError

# Pinned: a code is part of the API (callers and the HTTP API match on it).
CODES = {
    "ArchiveCorruptError": ("archive_corrupt", 500),
    "ArchiveError": ("archive_error", 503),
    "RetentionUnsafeError": ("retention_unsafe", 500),
    "BrokerError": ("broker_error", 503),
    "BrokerUnreachableError": ("broker_unreachable", 503),
    "KafkaAuthenticationError": ("kafka_authentication_failed", 503),
    "KafkaTlsError": ("kafka_tls_failed", 503),
    "DiskFullError": ("disk_full", 507),
    "CanonicalJsonError": ("non_canonical_json", 400),
    "CheckpointTooLargeError": ("checkpoint_too_large", 413),
    "CheckpointsRedactedError": ("checkpoints_redacted", 403),
    "CodecError": ("codec_error", 422),
    "ConfigError": ("config_error", 500),
    "ConflictError": ("conflict", 409),
    "ExecutionCancelledError": ("cancelled", 409),
    "ExecutionFailedError": ("execution_failed", 409),
    "ForkConflictError": ("fork_conflict", 409),
    "IdempotencyKeyReusedError": ("idempotency_key_reused", 422),
    "InProgressError": ("in_progress", 409),
    "InsecureBindError": ("insecure_bind", 500),
    "InvalidArgumentError": ("invalid_argument", 400),
    "InvalidConfigurationError": ("invalid_configuration", 500),
    "InvalidRequestError": ("invalid_request", 422),
    "InvalidStateError": ("invalid_state", 409),
    "JavaNotFoundError": ("java_not_found", 500),
    "NativeCoreError": ("native_core_unavailable", 500),
    "KafkaOperationError": ("kafka_error", 503),
    "ApprovalDeniedError": ("approval_denied", 409),
    "ApprovalExpiredError": ("approval_expired", 409),
    "ApprovalRefusedError": ("approval_refused", 403),
    "ApprovalPendingError": ("approval_pending", 409),
    "LeaseLostError": ("lease_lost", 409),
    "LedgerError": ("ledger_error", 500),
    "LedgerTimeoutError": ("timeout", 504),
    "NoOwnerError": ("no_owner", 503),
    "NoProjectorError": ("no_projector", 504),
    "NotAuthorizedError": ("not_authorized", 403),
    "NotFoundError": ("not_found", 404),
    "OwnerUnavailableError": ("owner_unavailable", 503),
    "ReceiptError": ("invalid_receipt", 401),
    "RequestInFlightError": ("request_in_flight", 409),
    "ResultExpiredError": ("result_expired", 409),
    "ResultUnrecordableError": ("result_unrecordable", 409),
    "ServeUnreachableError": ("serve_unreachable", 503),
    "StaleClaimError": ("stale_claim", 409),
    "StoreError": ("store_error", 503),
    "ToolInProgressError": ("in_progress", 409),
    "HistoryIncompleteError": ("history_incomplete", 500),
    "TopicConfigError": ("topic_config", 500),
    "TopicMissingError": ("topic_missing", 503),
    "UnauthorizedError": ("unauthorized", 401),
    "VerifyIncompleteError": ("verify_incomplete", 500),
}


def test_every_error_keeps_its_code_and_status() -> None:
    found = {
        name: (cls.code, cls.http_status)
        for name, cls in vars(errors).items()
        if isinstance(cls, type) and issubclass(cls, LedgerError)
    }
    assert found == CODES


def test_a_subclass_inherits_what_it_does_not_declare() -> None:
    class NarrowerError(InvalidArgumentError, code="narrower_argument_of_the_test"):
        pass

    try:
        assert (NarrowerError.code, NarrowerError.http_status) == (
            "narrower_argument_of_the_test",
            400,
        )
        assert str(NarrowerError("why")) == "[narrower_argument_of_the_test] why"
    finally:
        # The registry is process-wide: a test's own code must not reach the error page's test.
        del LedgerError._declared[NarrowerError.code], LedgerError._classes[NarrowerError.code]


@pytest.mark.parametrize("taken", ["conflict", "ledger_error"])
def test_a_code_taken_by_another_error_is_refused(taken: str) -> None:
    with pytest.raises(TypeError, match=f"error code '{taken}' is .*'s already"):

        class AgainError(LedgerError, code=taken):
            pass

    with pytest.raises(TypeError, match=f"error code '{taken}'"):

        class AssignedError(LedgerError):
            code = taken
