"""Checkpoint records as the current saver lays a put on ``<prefix>.checkpoints``."""

from __future__ import annotations

import uuid

from confluent_kafka import Producer

from oncelog.identity.partitioner import partition_for
from oncelog.schemas.checkpoint_parts import kafka_key, record_key
from oncelog.schemas.codec import encode_checkpoint
from oncelog.schemas.models import CheckpointKind, CheckpointRecord
from oncelog.settings import Settings


def publish_checkpoints(settings: Settings, count: int) -> None:
    """``count`` one-part checkpoints of as many threads, written by the current encoder."""
    assert settings.bootstrap_servers is not None
    producer = Producer(settings.kafka_config(settings.bootstrap_servers))
    for n in range(count):
        thread = f"upgrade-thread-{n}"
        record = CheckpointRecord(
            kind=CheckpointKind.CHECKPOINT, thread_id=thread, checkpoint_ns="",
            checkpoint_id=str(uuid.uuid1()), value_type="json", part=0, parts=1,
            data=b'{"v": %d}' % n, metadata_type="json", metadata=b"{}", metadata_json="{}",
            channel_versions_json="{}",
        )  # fmt: skip
        producer.produce(
            settings.checkpoints_topic,
            encode_checkpoint(record),
            kafka_key(record_key(record), 0),
            partition=partition_for(thread, settings.partitions),
        )
    producer.flush(60)
