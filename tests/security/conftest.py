"""The running-ledger fixtures of the integration tests, shared here, and the session's
secure broker: SASL_SSL with SCRAM-SHA-512 users and a CA of its own."""

from collections.abc import Iterator

import pytest

from oncelog.broker.local import LocalBroker
from oncelog.settings import Settings
from tests.integration.conftest import client, make_client, projector, topics

__all__ = ["client", "make_client", "projector", "secure_broker", "topics"]


@pytest.fixture(scope="session")
def secure_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalBroker]:
    """One SCRAM+TLS broker for the session (the ``kafka`` broker stays plaintext and fast)."""
    base = Settings(bootstrap_servers=None, data_dir=tmp_path_factory.mktemp("secure"))
    broker = LocalBroker(base, secure=True)
    broker.start()
    try:
        yield broker
    finally:
        broker.stop(graceful=False)  # its data goes with the session
