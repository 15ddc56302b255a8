"""The one workload every peer gets: warm-up, sequential claims, 64 workers, a replay mix.

A peer is anything that can claim a step (``claim``: a handle when granted, None when the
step's recorded result came back instead) and complete what it claimed (``complete``).
A **cycle** is claim + complete of a fresh step.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from bench.peers import cpu


class Peer(Protocol):
    """One ledger under test, already connected."""

    async def claim(self, channel: str, key: str) -> object | None:
        """Claim ``key`` in ``channel``: a handle to complete, or None when it replayed."""

    async def complete(self, handle: object, result: int) -> None:
        """Record ``result`` for a step claimed with ``handle``."""


@dataclass(frozen=True)
class Workload:
    """How much of each phase (counts and fixed windows)."""

    warmup_cycles: int = 200
    warmup_seconds: float = 3.0
    sequential: int = 1000
    workers: int = 64
    window_seconds: float = 20.0
    mix_seconds: float = 20.0


@dataclass
class PeerResult:
    """What one peer measured; ``cpu_us_per_cycle`` is per process, over the fresh window."""

    name: str
    claim_ms: list[float] = field(default_factory=list)
    cycle_ms: list[float] = field(default_factory=list)
    cycles_per_s: float = 0.0
    mix_ops_per_s: float = 0.0
    cpu_us_per_cycle: dict[str, float] = field(default_factory=dict)
    warmup_s: float = 0.0  # spent warming what the peer runs on (the broker's JIT), if any
    rounds_cycles_per_s: list[float] = field(default_factory=list)  # each round's, when combined


async def cycle(peer: Peer, channel: str, key: str, result: int) -> None:
    """Claim a step and complete it when granted (a replay needs no completion)."""
    handle = await peer.claim(channel, key)
    if handle is not None:
        await peer.complete(handle, result)


async def sequential(peer: Peer, run: str, n: int) -> tuple[list[float], list[float]]:
    """Claim latency and claim->complete latency of one sequential worker (ms)."""
    claims, cycles = [], []
    for i in range(n):
        began = time.perf_counter()
        handle = await peer.claim(f"{run}-seq", f"k-{i}")
        claimed = time.perf_counter()
        if handle is not None:
            await peer.complete(handle, i)
        claims.append((claimed - began) * 1000)
        cycles.append((time.perf_counter() - began) * 1000)
    return claims, cycles


Step = Callable[[int, int], Awaitable[None]]  # (worker, i) -> one operation


def fresh_cycles(peer: Peer, run_id: str) -> Step:
    """Each worker's i-th operation is a cycle of a step of its own (claim, then complete)."""
    return lambda w, i: cycle(peer, f"{run_id}-{w}", f"k-{i}", i)


async def window(workers: int, seconds: float, step: Step) -> int:
    """Run ``step`` in ``workers`` concurrent loops for ``seconds``; the operations done."""
    stop_at = time.monotonic() + seconds
    counts = [0] * workers

    async def loop(w: int) -> None:
        while time.monotonic() < stop_at:
            await step(w, counts[w])
            counts[w] += 1

    await asyncio.gather(*(loop(w) for w in range(workers)))
    return sum(counts)


async def timed_window(workers: int, seconds: float, step: Step) -> tuple[int, float]:
    """Operations done and operations per second of the whole window, tail included."""
    began = time.monotonic()
    done = await window(workers, seconds, step)
    return done, done / (time.monotonic() - began)


async def run(peer: Peer, name: str, load: Workload, readers: cpu.Readers) -> PeerResult:
    """Every phase of the workload on ``peer``, each on steps of its own."""
    run_id = f"{name}-{uuid.uuid4().hex[:6]}"
    result = PeerResult(name)
    for i in range(load.warmup_cycles):
        await cycle(peer, f"{run_id}-warm", f"k-{i}", i)
    await window(load.workers, load.warmup_seconds,
                 lambda w, i: cycle(peer, f"{run_id}-warm-{w}", f"k-{i}", i))  # fmt: skip
    result.claim_ms, result.cycle_ms = await sequential(peer, run_id, load.sequential)

    def fresh(w: int, i: int) -> Awaitable[None]:
        return cycle(peer, f"{run_id}-fresh-{w}", f"k-{i}", i)

    before = cpu.sample(readers)
    done, result.cycles_per_s = await timed_window(load.workers, load.window_seconds, fresh)
    result.cpu_us_per_cycle = cpu.us_per(before, cpu.sample(readers), done)
    _, result.mix_ops_per_s = await timed_window(
        load.workers, load.mix_seconds, lambda w, i: _mixed(peer, run_id, w, i)
    )
    return result


def _mixed(peer: Peer, run_id: str, w: int, i: int) -> Awaitable[None]:
    """Even operations are fresh cycles; odd ones claim a step this worker completed before."""
    if i % 2 == 0:
        return cycle(peer, f"{run_id}-mix-{w}", f"k-{i}", i)
    return cycle(peer, f"{run_id}-mix-{w}", f"k-{i - 1}", i - 1)
