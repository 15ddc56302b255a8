"""Any ``serve`` of the group answers for any thread: two real instances, a real broker."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointMetadata, empty_checkpoint

from oncelog.identity.partitioner import partition_for
from oncelog.integrations.langgraph import OncelogSaver
from oncelog.net import free_port
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics
from tests.integration.fleet import Fleet

pytestmark = pytest.mark.kafka

PARTITIONS = 6


@pytest.fixture
def fleet(settings: Settings) -> Iterator[Fleet]:
    six = settings.model_copy(update={"partitions": PARTITIONS})
    assert six.bootstrap_servers is not None
    create_topics(admin_client(six, six.bootstrap_servers), ledger_topics(six))
    running = Fleet(six)
    try:
        yield running
    finally:
        running.stop()


def _one_thread_per_partition() -> dict[int, str]:
    threads: dict[int, str] = {}
    while len(threads) < PARTITIONS:
        name = f"thread-{uuid.uuid4().hex[:8]}"
        threads.setdefault(partition_for(name, PARTITIONS), name)
    return threads


def _put(saver: OncelogSaver, thread: str, value: Any) -> None:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"value": value}
    checkpoint["channel_versions"] = {"value": saver.get_next_version(None, None)}
    config = RunnableConfig(configurable={"thread_id": thread, "checkpoint_ns": ""})
    saver.put(config, checkpoint, CheckpointMetadata(step=0), checkpoint["channel_versions"])


def test_each_instance_answers_for_the_threads_the_other_folds(
    fleet: Fleet, tmp_path: Path
) -> None:
    fleet.start("p0", tmp_path, free_port())
    fleet.start("p1", tmp_path, free_port())
    view = fleet.wait_stable({"p0", "p1"})
    threads = _one_thread_per_partition()
    owners = {view.owner_of(p).projector_id for p in threads}  # type: ignore[union-attr]
    assert owners == {"p0", "p1"}  # each instance folds some of the threads
    for instance in fleet.instances:
        # A saver that asks only this instance: the other's threads are forwarded there.
        with OncelogSaver(fleet.settings, query_url=instance.url) as saver:
            for p, thread in threads.items():
                _put(saver, thread, f"{instance.projector_id}:{p}")
            for p, thread in threads.items():
                found = saver.get_tuple({"configurable": {"thread_id": thread}})
                assert found is not None, (instance.projector_id, p)
                assert found.checkpoint["channel_values"] == {
                    "value": f"{instance.projector_id}:{p}"
                }
            for thread in threads.values():
                # A thread's own listing waits for its owner's fold of this saver's puts
                # (get_tuple answered from the saver's memory, without that wait).
                assert list(saver.list({"configurable": {"thread_id": thread}}))
            everything = {t.config["configurable"]["thread_id"] for t in saver.list(None)}
            assert set(threads.values()) <= everything  # the gathered list, every member
