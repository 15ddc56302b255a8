"""Closing a producer whose client is in a fatal state: typed, and only when records are lost."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from oncelog.errors import KafkaOperationError
from oncelog.kafka.producer import FutureProducer


class _FatalClient:
    """What confluent-kafka's Producer does once fatal: flush raises, len counts what is left."""

    def __init__(self, left: int) -> None:
        self.left = left

    def flush(self, timeout: float) -> int:
        error = KafkaError(KafkaError.CLUSTER_AUTHORIZATION_FAILED, "no producer id", fatal=True)
        raise KafkaException(error)

    def __len__(self) -> int:
        return self.left


def test_a_fatal_client_with_nothing_queued_closes_quietly() -> None:
    FutureProducer._flush_to_close(_FatalClient(0), 1.0)  # type: ignore[arg-type]


def test_a_fatal_client_with_records_queued_raises_a_typed_error() -> None:
    with pytest.raises(KafkaOperationError, match="3 records undelivered") as raised:
        FutureProducer._flush_to_close(_FatalClient(3), 1.0)  # type: ignore[arg-type]
    assert isinstance(raised.value.__cause__, KafkaException)
