"""Which watermark and offset errors are asked again (a leader being elected), which not."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from oncelog.kafka.reader import _leader_pending


def _raised(code: int) -> KafkaException:
    return KafkaException(KafkaError(code))


def test_a_new_leader_without_its_high_watermark_is_asked_again() -> None:
    # After a leader moves, offsets_for_times answers OFFSET_NOT_AVAILABLE for a moment:
    # the clock drill's settle failed on it when it was raised at once.
    assert _leader_pending(_raised(KafkaError.OFFSET_NOT_AVAILABLE))
    assert _leader_pending(_raised(KafkaError.NOT_LEADER_FOR_PARTITION))
    assert _leader_pending(_raised(KafkaError.LEADER_NOT_AVAILABLE))
    # A killed node's broker handle torn down under a question (the clock drill's serve
    # stopped on it at an assignment, after a leader kill).
    assert _leader_pending(_raised(KafkaError._DESTROY_BROKER))


def test_a_refusal_is_not_asked_again() -> None:
    assert not _leader_pending(_raised(KafkaError.TOPIC_AUTHORIZATION_FAILED))
    assert not _leader_pending(ValueError("not kafka"))
