"""Translate librdkafka errors into oncelog errors that name the topic.

An ACL denial is not retriable and not a broker outage: it becomes a
:class:`~oncelog.errors.NotAuthorizedError` (code ``not_authorized``).
"""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from oncelog.errors import BrokerUnreachableError, KafkaOperationError, NotAuthorizedError

#: Broker answers that mean "these credentials may not do this".
AUTHORIZATION_CODES = frozenset(
    {
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    }
)


#: Client-side answers that mean "no broker answered": refused, unresolvable, silent.
UNREACHABLE_CODES = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._RESOLVE,
        KafkaError._TIMED_OUT,
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


def is_unreachable(failure: KafkaError | Exception | None) -> bool:
    """Whether ``failure`` says that no broker answered (refused, unresolved, timed out)."""
    error = error_of(failure)
    return error is not None and error.code() in UNREACHABLE_CODES


def unreachable(
    what: str, bootstrap: str, timeout_s: float, failure: object
) -> BrokerUnreachableError:
    """No broker answered at ``bootstrap`` within ``timeout_s``, with what to do about it."""
    return BrokerUnreachableError(
        f"{what}: no broker answered at {bootstrap} within {timeout_s:g}s ({failure}); "
        "start one (`oncelog broker start`) or set ONCELOG_BOOTSTRAP_SERVERS to the address "
        "of a running broker"
    )
