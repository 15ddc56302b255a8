"""Translate librdkafka errors into oncelog errors that name the topic.

An ACL denial is not retriable and not a broker outage: it becomes a
:class:`~oncelog.errors.NotAuthorizedError` (code ``not_authorized``).
"""

from __future__ import annotations

import threading
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException

from oncelog.errors import (
    BrokerError,
    BrokerUnreachableError,
    KafkaAuthenticationError,
    KafkaOperationError,
    KafkaTlsError,
    NotAuthorizedError,
)

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


class _Polled(Protocol):
    def poll(self, timeout: float) -> object: ...


class LoginWatch:
    """A client's ``error_cb`` that keeps the last refused login or failed TLS handshake.

    librdkafka reports both only as error events: the call that waited for the broker
    fails as a transport error, indistinguishable from an outage. The events are
    queued at once and served by the client's ``poll``, which :meth:`heard` calls.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failure: KafkaError | None = None

    def __call__(self, error: KafkaError) -> None:
        if is_login_failure(error):
            with self._lock:
                self._failure = error

    def heard(self, client: _Polled) -> KafkaError | None:
        """The refused login or TLS failure reported so far (served now), else None."""
        client.poll(0)
        with self._lock:
            return self._failure


def is_login_failure(error: KafkaError) -> bool:
    """Whether ``error`` is a refused SASL login or a TLS handshake failure."""
    code = error.code()
    if code in (KafkaError._AUTHENTICATION, KafkaError._SSL):
        return True
    return code == KafkaError._TRANSPORT and "SSL" in error.str()


def refused_login(what: str, bootstrap: str, error: KafkaError) -> BrokerError:
    """The typed error of a refused login or an untrusted broker, with what to check."""
    if error.code() == KafkaError._AUTHENTICATION:
        return KafkaAuthenticationError(
            f"{what}: the broker at {bootstrap} refused the SASL login ({error.str()}); "
            "check ONCELOG_SASL_USERNAME, ONCELOG_SASL_PASSWORD and ONCELOG_SASL_MECHANISM"
        )
    return KafkaTlsError(
        f"{what}: the TLS handshake with {bootstrap} failed ({error.str()}); set "
        "ONCELOG_SSL_CA_LOCATION to the CA certificate that signed the broker's certificate"
    )


def no_answer(
    what: str, bootstrap: str, timeout_s: float, failure: object, client: object
) -> BrokerError:
    """Why ``client`` got no answer: a refused login or TLS failure its :class:`LoginWatch`
    heard (attribute ``login``), else :func:`unreachable`."""
    watch = getattr(client, "login", None)
    heard = watch.heard(client) if isinstance(watch, LoginWatch) else None  # type: ignore[arg-type]
    if heard is not None:
        return refused_login(what, bootstrap, heard)
    return unreachable(what, bootstrap, timeout_s, failure)
