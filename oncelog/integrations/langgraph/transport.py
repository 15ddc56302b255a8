"""The saver's two roads: records to Kafka, reads from ``oncelog serve``'s query API.

:class:`CheckpointWriter` produces a put's records to the thread's partition of the
checkpoints topic (idempotent, ``acks=all``) and returns once all are acknowledged,
remembering, per partition, the offset after its last acknowledged record.
:class:`CheckpointReader` asks the query API, naming those offsets (``after``) so that
the instance that folds the partition answers only once it folded them: a saver reads
its own writes. Failures are typed: no broker (:class:`BrokerUnreachableError`), no
serve (:class:`ServeUnreachableError`), a fold that does not get there in time
(:class:`LedgerTimeoutError`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import httpx
from confluent_kafka import KafkaException, TopicPartition
from pydantic import SecretStr

from oncelog.errors import BrokerUnreachableError, InvalidArgumentError, ServeUnreachableError
from oncelog.identity.partitioner import cached_partition_for
from oncelog.identity.validation import path_unsafe
from oncelog.kafka.producer import Delivery, FutureProducer
from oncelog.kafka.reader import partition_count, plain_consumer
from oncelog.schemas.checkpoint_parts import kafka_key, record_key
from oncelog.schemas.codec import encode_checkpoint
from oncelog.schemas.models import CheckpointRecord
from oncelog.schemas.read_api import error_of

#: The writer's own producer settings (the ledger's defaults otherwise).
PIPELINED: Mapping[str, Any] = {"max.in.flight.requests.per.connection": 5}

Tombstone = tuple[str, int]
"""(record_key, part) of a part to delete."""


class CheckpointWriter:
    """Produce checkpoint records; know where this writer's own writes landed."""

    def __init__(self, kafka: Mapping[str, Any], topic: str, timeout_s: float) -> None:
        self.topic = topic
        self._timeout_s = timeout_s
        self._bootstrap = str(kafka.get("bootstrap.servers"))
        # Kept open: it asks the partition's high watermark (:meth:`high`).
        self._consumer = plain_consumer(kafka)
        try:
            self.partitions = partition_count(
                self._consumer, topic, timeout_s=timeout_s, bootstrap=self._bootstrap
            )
        except BaseException:
            self._consumer.close()
            raise
        # A put is a few records produced at once: up to five requests in flight (order kept
        # by idempotence) so the ones after the first do not wait for its acknowledgement.
        self._producer = FutureProducer({**PIPELINED, **kafka})
        self._lock = threading.Lock()
        self._written: dict[int, int] = {}

    def partition_of(self, thread_id: str) -> int:
        """The partition of a thread's records (murmur2, as a channel's requests).

        Raises ``InvalidArgumentError`` for a thread id no URL path segment can carry
        (reads name the thread in the path): before anything is written.
        """
        why = path_unsafe(thread_id)
        if why is not None:
            raise InvalidArgumentError(
                f"thread_id {thread_id!r} {why}: the query API names a thread in a URL path, "
                "so its checkpoints could not be read back; use another thread id"
            )
        return cached_partition_for(thread_id, self.partitions)

    def put(self, thread_id: str, records: Sequence[CheckpointRecord]) -> list[int]:
        """Produce ``records`` to the thread's partition and wait for every acknowledgement;
        the offsets they were written at."""
        p = self.partition_of(thread_id)
        return self._await(
            thread_id,
            [
                self._producer.send(
                    self.topic, p, kafka_key(record_key(r), r.part), encode_checkpoint(r)
                )
                for r in records
            ],
        )

    def delete(self, thread_id: str, parts: Sequence[Tombstone]) -> list[int]:
        """Tombstones (null values) for ``parts`` of the thread; compaction removes them."""
        p = self.partition_of(thread_id)
        return self._await(
            thread_id,
            [self._producer.send(self.topic, p, kafka_key(k, part), None) for k, part in parts],
        )

    def after(self, thread_id: str | None = None) -> str | None:
        """The ``after`` parameter: where this writer's writes (to the thread's partition,
        or to every partition) were acknowledged; None before any."""
        with self._lock:
            if thread_id is None:
                pairs = sorted(self._written.items())
            else:
                p = self.partition_of(thread_id)
                pairs = [(p, self._written[p])] if p in self._written else []
        return ",".join(f"{p}:{o}" for p, o in pairs) or None

    def seen(self, partition: int, offset: int) -> None:
        """Have reads wait for the fold up to ``offset`` too (another writer's records
        this writer saw the watermark pass)."""
        with self._lock:
            self._written[partition] = max(self._written.get(partition, 0), offset)

    def high(self, partition: int) -> int:
        """The partition's high watermark, asked of the broker now (one round trip)."""
        try:
            _, high = self._consumer.get_watermark_offsets(
                TopicPartition(self.topic, partition), timeout=self._timeout_s, cached=False
            )
        except KafkaException as exc:
            raise BrokerUnreachableError(
                f"asking the end of {self.topic}[{partition}]: no broker at {self._bootstrap} "
                f"answered within {self._timeout_s:g}s ({exc}). Start the broker or check "
                "ONCELOG_BOOTSTRAP_SERVERS, then retry"
            ) from exc
        return int(high)

    def close(self) -> None:
        """Flush what is queued and release the producer and the consumer."""
        self._producer.close()
        self._consumer.close()

    def _await(self, thread_id: str, futures: list[Future[Delivery]]) -> list[int]:
        try:
            acked = [f.result(timeout=self._timeout_s) for f in futures]
        except FutureTimeout as exc:
            raise BrokerUnreachableError(
                f"writing checkpoints of thread {thread_id!r} to {self.topic}: no broker at "
                f"{self._bootstrap} acknowledged them within {self._timeout_s:g}s; they may "
                "still be written when one answers. Start the broker or check "
                "ONCELOG_BOOTSTRAP_SERVERS, then retry the step"
            ) from exc
        with self._lock:
            for partition, offset in acked:
                self._written[partition] = max(self._written.get(partition, 0), offset + 1)
        return [offset for _, offset in acked]


class CheckpointReader:
    """GET the query API's checkpoint routes of one ``oncelog serve`` (any member)."""

    def __init__(self, base_url: str, token: SecretStr | None, timeout_s: float) -> None:
        self.base = base_url.rstrip("/")
        headers = {"Accept": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token.get_secret_value()}"
        # The fold may be waited for (up to 30 s on the server): reads get that much more.
        self._client = httpx.Client(headers=headers, timeout=timeout_s + 30.0)
        self._timeout_s = timeout_s

    def get(self, path: str, params: Mapping[str, Any]) -> Any:
        """The JSON answer of ``path`` (segments already quoted), or its typed error.

        While the group has no owner for the partition (a serve just started, or a
        rebalance), the read is asked again, for up to ``timeout_s``.
        """
        present = {k: v for k, v in params.items() if v is not None}
        url = f"{self.base}{path}"
        deadline = time.monotonic() + self._timeout_s
        while True:
            try:
                response = self._client.get(url, params=present)
            except httpx.TransportError as exc:
                raise ServeUnreachableError(
                    f"reading checkpoints from {url}: no `oncelog serve` answered ({exc}); "
                    "start it, or give the saver the query URL of a running one (query_url=)"
                ) from exc
            if not (_no_owner(response) and time.monotonic() < deadline):
                break
            time.sleep(_NO_OWNER_PAUSE_S)  # the group is assigning the partition
        if response.is_error:
            raise error_of(response.status_code, response.content, f"GET {url}")
        return response.json()

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()


_NO_OWNER_PAUSE_S = 0.1


def _no_owner(response: httpx.Response) -> bool:
    """A 503 ``no_owner``: no member of the group owns the partition yet."""
    if response.status_code != 503:
        return False
    try:
        return bool(response.json().get("code") == "no_owner")
    except ValueError:
        return False
