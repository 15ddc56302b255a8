"""Which lane a record takes: at once when it is alone, batched when not."""

from __future__ import annotations

import pytest

from oncelog.errors import KafkaOperationError
from oncelog.kafka.lanes import Lanes
from oncelog.kafka.producer import FutureProducer

NOWHERE = {"bootstrap.servers": "127.0.0.1:1"}
LINGER_MS = 2.0


@pytest.fixture
def sender(monkeypatch: pytest.MonkeyPatch) -> tuple[Lanes, list[str]]:
    """A sender whose producers record what they were given instead of connecting."""
    sent: list[str] = []
    made = Lanes(NOWHERE, LINGER_MS)
    for name in ("express", "batched"):
        producer: FutureProducer = getattr(made, name)

        def record(topic: str, partition: int, key: bytes, value: bytes, headers: object = None,
                   *, _name: str = name, _producer: FutureProducer = producer) -> None:  # fmt: skip
            _producer.raise_pending()
            sent.append(f"{_name}:{value.decode()}")

        monkeypatch.setattr(producer, "send_nowait", record)
    return made, sent


def test_a_record_marked_alone_goes_express_and_one_not_alone_is_batched(
    sender: tuple[Lanes, list[str]],
) -> None:
    """Only the flag: the caller (the projector, by its poll batch's size) says who is alone."""
    made, sent = sender
    made.lane(alone=True).send_nowait("t", 0, b"k", b"lone")
    made.lane(alone=False).send_nowait("t", 0, b"k", b"busy")
    assert sent == ["express:lone", "batched:busy"]


def test_only_the_batched_lane_lingers() -> None:
    made = Lanes(NOWHERE, LINGER_MS)
    assert made.express.config["linger.ms"] == 0
    assert made.batched.config["linger.ms"] == LINGER_MS


def test_a_failure_of_either_producer_is_raised_by_the_next_send(
    sender: tuple[Lanes, list[str]],
) -> None:
    made, sent = sender
    made.batched._pending_error = KafkaOperationError("delivery to t[0] failed")
    with pytest.raises(KafkaOperationError, match="delivery to t"):
        made.lane(alone=True).send_nowait("t", 0, b"k", b"lone")  # the express one, this time
    assert sent == []
    made.lane(alone=True).send_nowait("t", 0, b"k", b"again")  # raised once
    assert sent == ["express:again"]


def test_nothing_goes_express_while_records_linger_in_the_batched_lane(
    sender: tuple[Lanes, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    made, sent = sender
    monkeypatch.setattr(made.batched, "queued", lambda: 3)  # not yet acknowledged
    made.lane(alone=True).send_nowait("t", 0, b"k", b"second")
    monkeypatch.setattr(made.batched, "queued", lambda: 0)
    made.lane(alone=True).send_nowait("t", 0, b"k", b"third")
    assert sent == ["batched:second", "express:third"]  # the second cannot overtake


def test_nothing_goes_batched_while_express_records_are_unacknowledged(
    sender: tuple[Lanes, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    made, sent = sender
    monkeypatch.setattr(made.express, "queued", lambda: 1)  # in flight, a slow broker
    made.lane(alone=False).send_nowait("t", 0, b"k", b"busy")  # would linger, then overtake it
    monkeypatch.setattr(made.express, "queued", lambda: 0)
    made.lane(alone=False).send_nowait("t", 0, b"k", b"busy-again")
    assert sent == ["express:busy", "batched:busy-again"]
