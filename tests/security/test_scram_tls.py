"""Logging in to the SCRAM+TLS broker: a wrong password or an untrusted certificate is a
typed error with a hint on the SDK, ``serve``'s and the CLI's paths, within the client's
connect timeout, and the password is never printed."""

from __future__ import annotations

import time

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from oncelog.broker.local import LocalBroker
from oncelog.cli import app
from oncelog.errors import BrokerError, KafkaAuthenticationError, KafkaTlsError
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings
from oncelog.topics import admin_client, check_topics, ledger_topics

WRONG = "not-the-password"
BOUND_S = 5.0


def _worker(broker: LocalBroker, **update: object) -> Settings:
    base = broker.client_settings("worker")
    return base.model_copy(update={"connect_timeout_s": BOUND_S, **update})


def _open_sdk(settings: Settings) -> BrokerError:
    begin = time.monotonic()
    with pytest.raises(BrokerError) as failed:
        SyncLedgerClient(settings).open()
    assert time.monotonic() - begin < BOUND_S * 3  # bounded: the connect timeout, not a hang
    return failed.value


@pytest.mark.kafka
def test_a_wrong_password_is_a_typed_error_without_the_password(
    secure_broker: LocalBroker,
) -> None:
    settings = _worker(secure_broker, sasl_password=SecretStr(WRONG))
    error = _open_sdk(settings)
    assert isinstance(error, KafkaAuthenticationError)
    assert error.code == "kafka_authentication_failed"
    assert "ONCELOG_SASL_PASSWORD" in str(error)  # the hint
    assert WRONG not in str(error)
    assert WRONG not in repr(settings)
    # serve checks the topics with an admin client first: the same error there.
    assert settings.bootstrap_servers is not None
    admin = admin_client(settings, settings.bootstrap_servers)
    with pytest.raises(KafkaAuthenticationError):
        check_topics(admin, ledger_topics(settings), None)


@pytest.mark.kafka
def test_an_untrusted_broker_certificate_is_a_typed_error(secure_broker: LocalBroker) -> None:
    error = _open_sdk(_worker(secure_broker, ssl_ca_location=None))  # the system's CAs only
    assert isinstance(error, KafkaTlsError)
    assert error.code == "kafka_tls_failed"
    assert "ONCELOG_SSL_CA_LOCATION" in str(error)


@pytest.mark.kafka
def test_the_cli_names_a_refused_login_and_hides_the_password(
    secure_broker: LocalBroker,
) -> None:
    good = secure_broker.client_settings("admin")
    env = {
        "ONCELOG_BOOTSTRAP_SERVERS": good.bootstrap_servers or "",
        "ONCELOG_SECURITY_PROTOCOL": "SASL_SSL",
        "ONCELOG_SASL_MECHANISM": "SCRAM-SHA-512",
        "ONCELOG_SASL_USERNAME": "admin",
        "ONCELOG_SASL_PASSWORD": WRONG,
        "ONCELOG_SSL_CA_LOCATION": good.ssl_ca_location or "",
        "ONCELOG_CONNECT_TIMEOUT_S": str(BOUND_S),
    }
    result = CliRunner().invoke(app, ["topics", "create"], env=env)
    assert isinstance(result.exception, KafkaAuthenticationError), result.output
    assert WRONG not in result.output
    assert WRONG not in str(result.exception)


@pytest.mark.kafka
def test_the_right_login_over_tls_reaches_the_ledger(secure_broker: LocalBroker) -> None:
    admin = secure_broker.client_settings("admin")
    assert admin.bootstrap_servers is not None
    assert admin.security_protocol == "SASL_SSL"
    assert admin.sasl_mechanism == "SCRAM-SHA-512"
    client = admin_client(admin, admin.bootstrap_servers)
    assert client.list_topics(timeout=BOUND_S).brokers
