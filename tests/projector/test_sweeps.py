"""The sweep scheduler: one pending sweep per expired operation, forgotten on revoke."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from oncelog.kafka.producer import FutureProducer
from oncelog.projector.store import Store
from oncelog.projector.sweeps import SweepScheduler
from tests.projector.fold_factories import Op
from tests.projector.store_factories import feed


class RecordingProducer:
    """Stands in for the producer: the scheduler only queues records (no broker here)."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, int, bytes]] = []

    def send_nowait(self, topic: str, partition: int, key: bytes, value: bytes) -> None:
        self.sent.append((topic, partition, key))


def _expired_result(tmp_path: Path) -> Store:
    """A store whose partition 0 holds one completed result, long past its retention."""
    store = Store(tmp_path / "ledger.duckdb")
    op = Op(key_name="step-0")
    feed(store, 0, [(op.claim("t1"), 1_000), (op.complete("t1"), 2_000)])
    return store


def test_a_revoked_partitions_pending_sweep_is_sent_again_when_it_comes_back(
    tmp_path: Path,
) -> None:
    with _expired_result(tmp_path) as store:
        recorded = RecordingProducer()
        producer = cast(FutureProducer, recorded)
        sweeps = SweepScheduler("t.requests", interval_s=0.0)
        assert sweeps.maybe_send(store.reader(), producer, [0]) == 1
        assert sweeps.maybe_send(store.reader(), producer, [0]) == 0  # pending: not again
        sweeps.drop_partitions([1])
        assert sweeps.maybe_send(store.reader(), producer, [0]) == 0  # another partition
        # Revoked before the sweep was folded: another member judges it. Should the
        # partition come back restored past that sweep, it must be sendable again.
        sweeps.drop_partitions([0])
        assert sweeps.maybe_send(store.reader(), producer, [0]) == 1
        assert [(topic, p) for topic, p, _ in recorded.sent] == [("t.requests", 0)] * 2


def test_no_sweep_for_a_partition_not_owned(tmp_path: Path) -> None:
    with _expired_result(tmp_path) as store:
        sweeps = SweepScheduler("t.requests", interval_s=0.0)
        assert (
            sweeps.maybe_send(store.reader(), cast(FutureProducer, RecordingProducer()), [1]) == 0
        )
