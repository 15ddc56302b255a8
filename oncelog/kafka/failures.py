"""Translate librdkafka errors into oncelog errors that name the topic.

An ACL denial is not retriable and not a broker outage: it becomes a
:class:`~oncelog.errors.NotAuthorizedError` (code ``not_authorized``).
"""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from oncelog.errors import KafkaOperationError, NotAuthorizedError

#: Broker answers that mean "these credentials may not do this".
AUTHORIZATION_CODES = frozenset(
    {
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    }
)


def error_of(failure: KafkaError | Exception | None) -> KafkaError | None:
    """The :class:`KafkaError` inside ``failure`` (itself, or a KafkaException's first arg)."""
    if isinstance(failure, KafkaError):
        return failure
    if isinstance(failure, KafkaException) and failure.args:
        inner = failure.args[0]
        return inner if isinstance(inner, KafkaError) else None
    return None


def is_authorization(failure: KafkaError | Exception | None) -> bool:
    """Whether ``failure`` is an ACL denial."""
    error = error_of(failure)
    return error is not None and error.code() in AUTHORIZATION_CODES


def kafka_failure(what: str, topic: str, failure: KafkaError | Exception) -> KafkaOperationError:
    """What failed on ``topic``: NotAuthorizedError on ACL denials, else KafkaOperationError."""
    if is_authorization(failure):
        return NotAuthorizedError(
            f"{what}: not authorized on topic {topic} ({failure}); "
            "check the principal's ACLs (`oncelog topics acl`)",
            topic=topic,
        )
    return KafkaOperationError(f"{what}: {failure}")
