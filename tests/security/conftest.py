"""The running-ledger fixtures of the integration tests, shared here."""

from tests.integration.conftest import client, make_client, projector, topics

__all__ = ["client", "make_client", "projector", "topics"]
