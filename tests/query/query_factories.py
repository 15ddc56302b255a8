"""Builds a small ledger in a DuckDB file through the real fold and store."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oncelog.identity.canonical_json import canonical_json
from oncelog.identity.ids import operation_id, request_hash, step_key_name
from oncelog.projector.store import Store
from oncelog.query.owners import OwnerView
from oncelog.schemas.models import Body, Claim, Complete, Effect, Request
from tests.projector.store_factories import fold_to_batch

LEASE_MS = 10_000
CHANNEL = "run-42"
PARTITION = 2


def request(channel: str, key: str, rid: str, token: str | None, body: Body) -> Request:
    return Request(rid, operation_id(channel, key), channel, key, token, body)


def claim(
    channel: str, key: str, rid: str, token: str, worker: str, effect: Effect = Effect.PURE
) -> Request:
    params = {"n": key}
    body = Claim(
        "tool", canonical_json(params), request_hash("tool", params), LEASE_MS, 600_000,
        effect, worker,
    )  # fmt: skip
    return request(channel, key, rid, token, body)


def complete(channel: str, key: str, rid: str, token: str, result: object) -> Request:
    return request(channel, key, rid, token, Complete(canonical_json(result)))


def commit(store: Store, partition: int, records: list[tuple[Request, int]]) -> None:
    """Fold ``records`` at the stored position of ``partition`` and commit them."""
    store.commit(fold_to_batch(store, partition, records))


STEP1, STEP2, CHARGE = step_key_name(1), step_key_name(2), "charge:order-4471"


@dataclass(frozen=True)
class Ledger:
    path: Path
    store: Store


def build(store: Store) -> None:
    """Offsets of partition 2, channel run-42.

    0 step-1 claimed (pure, w1)      1 step-1 completed {"ok": 1}
    2 step-2 claimed (external, w1)  3 step-2 reclaimed by w2 (epoch 2)
    4 step-2 stale completion by t2  5 step-2 completed "charged" by t3
    6 charge:order-4471 claimed (external)
    """
    c = CHANNEL
    commit(
        store,
        PARTITION,
        [
            (claim(c, STEP1, "r0", "t1", "w1"), 1_000),
            (complete(c, STEP1, "r1", "t1", {"ok": 1}), 2_000),
            (claim(c, STEP2, "r2", "t2", "w1", Effect.EXTERNAL), 3_000),
        ],
    )
    commit(
        store,
        PARTITION,
        [
            (claim(c, STEP2, "r3", "t3", "w2", Effect.EXTERNAL), 3_000 + LEASE_MS),
            (complete(c, STEP2, "r4", "t2", "charged"), 3_001 + LEASE_MS),
            (complete(c, STEP2, "r5", "t3", "charged"), 3_002 + LEASE_MS),
            (claim(c, CHARGE, "r6", "t4", "w3", Effect.EXTERNAL), 3_003 + LEASE_MS),
        ],
    )
    commit(store, 0, [(claim("run-7", STEP1, "r7", "t5", "w9"), 500)])


class Owners:
    """A fixed owner view of a projector group; ``fresh`` is what a refresh finds."""

    def __init__(self, view: OwnerView, fresh: OwnerView | None = None) -> None:
        self._view = view
        self._fresh = fresh or view
        self.refreshes = 0

    def view(self) -> OwnerView:
        return self._view

    def refreshed(self) -> OwnerView:
        self.refreshes += 1
        return self._fresh
