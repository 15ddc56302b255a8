"""The demo's sample fleet: 6-step agent workflows against a downstream service.

Steps alternate pure model calls and external effects. Each worker claims a
step, replays a recorded result, or reconciles with the downstream when it
reclaims an external step whose previous holder may have applied it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Final

from drills.sample.downstream import DownstreamClient
from drills.sample.workflow import STEPS
from oncelog.errors import LedgerTimeoutError, StaleClaimError
from oncelog.producer.client import LedgerClient
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.results import Claim
from oncelog.settings import Settings

CRASH_AFTER_EFFECT: Final = ("run-07", 2)  # the worker charges, then dies
LOST_RESPONSE: Final = ("run-03", 4)  # the completion lands, its answer does not
# In the crashed run too: its restart replays step 1 and reclaims step 2, so run-07's
# timeline page shows a replay, a reclaim and a fenced straggler at once.
ZOMBIE: Final = ("run-07", 6)  # a paused worker wakes after its lease was taken


@dataclass
class FleetReport:
    """What happened, for the demo's printout."""

    steps_done: int = 0
    replayed: list[str] = field(default_factory=list)
    reclaimed: list[str] = field(default_factory=list)
    reconciled: list[str] = field(default_factory=list)
    fenced: list[str] = field(default_factory=list)


def _params(run: str, step: int) -> dict[str, Any]:
    return {"run": run, "step": step, "amount_cents": 100 * step, "trace": f"{run}/{step}"}


class Worker:
    """One agent worker: a client of its own, running steps of the runs it is given."""

    def __init__(self, settings: Settings, name: str, downstream: str, report: FleetReport):
        self.client = LedgerClient(settings, worker_id=name, timeouts=Timeouts(60, 5))
        self.downstream = DownstreamClient(downstream)
        self.report = report

    async def run_workflow(self, run: str) -> None:
        """Run all six steps of one workflow in order."""
        for step, (tool, effect) in enumerate(STEPS, start=1):
            await self.run_step(run, step, tool, effect)

    async def run_step(self, run: str, step: int, tool: str, effect: str) -> Any:
        """Claim, act (or replay, or reconcile), complete; wait out a live holder."""
        while True:
            claim = await self._claim(run, step, tool, effect)
            if claim.status == "replayed":
                self.report.replayed.append(f"{run}/{step}")
                return claim.result
            if claim.status == "in_progress":
                await asyncio.sleep(0.2)  # someone holds it; its lease decides
                continue
            return await self._act(claim, run, step, effect)

    async def _claim(self, run: str, step: int, tool: str, effect: str) -> Claim:
        lease = 1 if (run, step) in (CRASH_AFTER_EFFECT, ZOMBIE) else 30
        return await self.client.claim_execution(
            run, step=step, tool_name=tool, params=_params(run, step),
            dedup_fields=["run", "step", "amount_cents"], lease_seconds=lease, effect=effect,
        )  # fmt: skip

    async def _act(self, claim: Claim, run: str, step: int, effect: str) -> Any:
        ex = claim.execution
        result: Any = None
        settled = None  # how the completion reports the previous attempt (reconciled)
        if claim.status == "reclaimed":
            self.report.reclaimed.append(f"{run}/{step}")
            if effect == "external":
                seen = await asyncio.to_thread(self.downstream.was_applied, ex.idempotency_key)
                settled = "found" if seen["applied"] else "not_found"
                if seen["applied"]:
                    self.report.reconciled.append(f"{run}/{step}")
                    result = seen["response"]
        if result is None:
            result = await self._effect(claim, effect)
        await self._complete(claim, run, step, result, settled)
        self.report.steps_done += 1
        return result

    async def _effect(self, claim: Claim, effect: str) -> Any:
        ex = claim.execution
        if effect == "pure":
            return {"model_output": f"{ex.tool_name} of {ex.params['run']}", "epoch": ex.epoch}
        return await asyncio.to_thread(
            self.downstream.apply, ex.id, ex.idempotency_key, {"tool": ex.tool_name}
        )

    async def _complete(
        self, claim: Claim, run: str, step: int, result: Any, settled: str | None = None
    ) -> None:
        ex = claim.execution
        if (run, step) == CRASH_AFTER_EFFECT and claim.status == "claimed":
            raise _WorkerCrashError  # the effect happened; the completion never will
        if (run, step) == ZOMBIE and claim.status == "claimed":
            # A long pause (think GC or a network partition): while it lasts the
            # lease lapses and a rescuer reclaims and completes the step.
            await self._rescue(run, step)
            try:
                await self.client.complete_execution(ex, claim.claim_token, result)
            except StaleClaimError:
                self.report.fenced.append(f"{run}/{step}")
                return
        if (run, step) == LOST_RESPONSE and claim.status == "claimed":
            lossy = LedgerClient(self.client.settings, timeouts=Timeouts(0.001, 0.001))
            await lossy.__aenter__()
            try:
                await lossy.complete_execution(ex, claim.claim_token, result)
            except LedgerTimeoutError:
                pass  # sent, but the answer is lost: the retry below must replay
            finally:
                await lossy.__aexit__(None, None, None)
            await self.run_step(run, step, ex.tool_name, "external")
            return
        await self.client.complete_execution(ex, claim.claim_token, result, reconciled=settled)

    async def _rescue(self, run: str, step: int) -> None:
        tool, effect = STEPS[step - 1]
        rescuer = Worker(self.client.settings, "worker-rescue", self.downstream.url, self.report)
        await rescuer.client.__aenter__()
        try:
            await rescuer.run_step(run, step, tool, effect)
        finally:
            await rescuer.client.__aexit__(None, None, None)


class _WorkerCrashError(Exception):
    """A simulated worker death: the workflow stops here and is retried elsewhere."""


async def run_fleet(settings: Settings, downstream: str, runs: int, workers: int) -> FleetReport:
    """Run ``runs`` workflows on ``workers`` workers; crashed runs are retried by another."""
    report = FleetReport()
    queue: asyncio.Queue[str] = asyncio.Queue()
    for i in range(1, runs + 1):
        queue.put_nowait(f"run-{i:02d}")
    pool = [Worker(settings, f"worker-{n}", downstream, report) for n in range(workers)]
    for worker in pool:
        await worker.client.__aenter__()
    tasks = [asyncio.create_task(_drain(w, queue)) for w in pool]
    try:
        await queue.join()
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for worker in pool:
            await worker.client.__aexit__(None, None, None)
    return report


async def _drain(worker: Worker, queue: asyncio.Queue[str]) -> None:
    while True:
        run = await queue.get()
        try:
            await worker.run_workflow(run)
        except _WorkerCrashError:
            queue.put_nowait(run)  # a supervisor restarts the workflow on another worker
            await asyncio.sleep(0)  # let another worker pick it up
        finally:
            queue.task_done()
