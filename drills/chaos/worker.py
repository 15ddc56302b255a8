"""One worker process: runs a 6-step workflow and, when told to, SIGKILLs itself.

The crash is deterministic: the process kills itself at the chosen point with
SIGKILL, so no ``finally`` block, flush or goodbye runs. "Sent but the answer
never read" points deliver the request to Kafka (the producer's delivery report
is awaited) and die before waiting for the decision.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any, NoReturn

from drills.chaos.model import (
    AFTER_CLAIM,
    AFTER_COMPLETE,
    AFTER_EFFECT,
    BEFORE_CLAIM,
    DURING_HEARTBEAT,
    LEASE_SECONDS,
    NAIVE,
    PASSTHROUGH,
    RECONCILE,
    RunSpec,
)
from drills.history.client import RecordingClient, operation_key
from drills.history.record import Recorder, canonical
from drills.sample.downstream import DownstreamClient
from drills.sample.workflow import STEPS
from oncelog.errors import LedgerError
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.results import Claim
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings

_CLAIM_ATTEMPTS = 50  # bounded: each in_progress answer waits out one (short) lease


def crash_marker(result_path: str) -> Path:
    """Where a dying attempt notes that it reached its crash point."""
    return Path(f"{result_path}.crashed")


def die(spec: RunSpec) -> NoReturn:
    """SIGKILL this process: the crash the harness is about (noted first, for the harness)."""
    crash_marker(spec.result_path).write_text(str(spec.crash_point))
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("unreachable: SIGKILL cannot be caught")


def _params(spec: RunSpec, step: int) -> dict[str, Any]:
    # "trace" is volatile (left out of dedup_fields): a retry sends a new one.
    return {"run": spec.channel_id, "step": step, "amount_cents": 100 * step,
            "trace": uuid.uuid4().hex}  # fmt: skip


class Worker:
    """Runs the steps of one workflow for one strategy; records what it saw."""

    def __init__(self, spec: RunSpec, client: SyncLedgerClient | None) -> None:
        self.spec = spec
        self.client = client
        self.recorder: Recorder | None = None
        self.calls: RecordingClient | None = None
        if client is not None:  # each ledger call is recorded for the history check
            self.recorder = Recorder(Path(spec.history_path))
            self.calls = RecordingClient(client, self.recorder)
        self.downstream = DownstreamClient(spec.downstream_url)
        self.records: list[dict[str, Any]] = []

    def crash_here(self, step: int, point: str) -> bool:
        """True when this attempt must die at ``point`` of ``step``."""
        return self.spec.crash_point == point and self.spec.crash_step == step

    def effect(self, step: int, key: str | None) -> Any:
        """Run one step's work: a model call (pure) or a call to the downstream."""
        tool, kind = STEPS[step - 1]
        if kind == "pure":
            return {"model_output": f"{tool} of {self.spec.channel_id}"}
        # Without key passthrough every call carries a fresh key of its own, as
        # an HTTP client that mints a request id per attempt would.
        return self.downstream.apply(self.spec.op(step), key or uuid.uuid4().hex, {"tool": tool})

    def run_naive(self) -> None:
        """No ledger: run every step; a retry cannot know what already happened."""
        for step in range(1, len(STEPS) + 1):
            if any(self.crash_here(step, p) for p in (BEFORE_CLAIM, AFTER_CLAIM, DURING_HEARTBEAT)):
                die(self.spec)  # nothing to claim or heartbeat: all three die before the effect
            result = self.effect(step, None)
            if any(self.crash_here(step, p) for p in (AFTER_EFFECT, AFTER_COMPLETE)):
                die(self.spec)  # nothing to complete: both die after the effect
            self.records.append({"step": step, "status": "ran", "result": result})

    def run_ledger(self) -> None:
        """Claim, act (or replay, or reconcile), complete, step by step."""
        for step in range(1, len(STEPS) + 1):
            self.ledger_step(step)

    def ledger_step(self, step: int) -> None:
        """One step through the ledger, with this attempt's crash points."""
        if self.crash_here(step, BEFORE_CLAIM):
            die(self.spec)
        claim = self.claim(step)
        record: dict[str, Any] = {
            "step": step, "status": str(claim.status), "epoch": claim.execution.epoch,
            "operation_id": claim.execution.id,
            "previous": None if claim.previous is None else claim.previous._asdict(),
        }  # fmt: skip
        self.records.append(record)
        if claim.status == "replayed":
            record["result"] = claim.result
            return
        record["result"] = self.act(claim, step)

    def claim(self, step: int) -> Claim:
        """Claim ``step``; while a (dead) holder's lease is live, wait it out and ask again."""
        assert self.calls is not None
        tool, kind = STEPS[step - 1]
        for _ in range(_CLAIM_ATTEMPTS):
            claim = self.calls.claim(
                self.spec.channel_id, step=step, tool_name=tool, params=_params(self.spec, step),
                dedup_fields=["run", "step", "amount_cents"], lease_seconds=LEASE_SECONDS,
                effect=kind,
            )  # fmt: skip
            if claim.status != "in_progress":
                return claim
            assert claim.lease_deadline_ms is not None
            # Waiting for the lease to lapse is waiting for time itself (log time
            # tracks wall time on the one local broker); a small margin absorbs skew.
            time.sleep(max(0.0, claim.lease_deadline_ms / 1000 - time.time()) + 0.05)
        raise LedgerError(f"{self.spec.channel_id} step {step} stayed in progress")

    def act(self, claim: Claim, step: int) -> Any:
        """The owned path: heartbeat, reconcile or apply, complete."""
        assert self.calls is not None
        ex, token = claim.execution, claim.claim_token
        if self.crash_here(step, AFTER_CLAIM):
            die(self.spec)
        external = STEPS[step - 1][1] == "external"
        if external:
            # An external step is slow: it heartbeats once before calling out.
            if self.crash_here(step, DURING_HEARTBEAT):
                self.send_only("heartbeat", claim)
            self.calls.heartbeat(ex, token)
        result, settled = self.reconciled(claim) if external else (None, None)
        if result is None:
            passthrough = self.spec.strategy in (PASSTHROUGH, RECONCILE)
            result = self.effect(step, ex.idempotency_key if passthrough else None)
        if self.crash_here(step, AFTER_EFFECT):
            die(self.spec)
        if self.crash_here(step, AFTER_COMPLETE):
            self.send_only("complete", claim, result, settled)
        self.calls.complete(ex, token, result, reconciled=settled)
        return result

    def reconciled(self, claim: Claim) -> tuple[Any, str | None]:
        """Reconcile-on-reclaim: the downstream's first response when it already applied the
        key (``found``), else None (``not_found``: the effect runs now); the completion says
        which. Other strategies do not reconcile: (None, None)."""
        if self.spec.strategy != RECONCILE or claim.status != "reclaimed":
            return None, None
        seen = self.downstream.was_applied(claim.execution.idempotency_key)
        return (seen["response"], "found") if seen["applied"] else (None, "not_found")

    def send_only(
        self, kind: str, claim: Claim, result: Any = None, settled: str | None = None
    ) -> NoReturn:
        """Deliver a heartbeat or completion to Kafka, then die before reading its decision."""
        assert self.client is not None
        assert self.recorder is not None
        ex = claim.execution
        # The SDK's own request builders and transport, minus the wait for the answer.
        requests = self.client.requests
        if kind == "complete":
            pending = requests.complete_execution(ex, claim.claim_token, result, reconciled=settled)
            request = pending.request
            payload = {"result": canonical(result)}
        else:
            request = requests.heartbeat_execution(ex, claim.claim_token).request
            payload = {}
        # Recorded without an answer: the history holds it as unknown.
        self.recorder.call(operation_key(ex), kind, claim.claim_token, **payload)
        self.client.transport.send_acknowledged(request, timeout_s=30)
        die(self.spec)


def run(spec: RunSpec) -> None:
    """Process entry point: run the workflow, write what happened to ``spec.result_path``."""
    client = None
    if spec.strategy != NAIVE:
        settings = Settings(bootstrap_servers=spec.bootstrap, topic_prefix=spec.topic_prefix,
                            partitions=spec.partitions)  # fmt: skip
        client = SyncLedgerClient(settings, timeouts=Timeouts(60, 5))
        client.open()
    worker = Worker(spec, client)
    error = None
    try:
        worker.run_ledger() if client is not None else worker.run_naive()
    except Exception as exc:  # reported to the harness, which counts the steps it lost
        error = repr(exc)
        raise
    finally:
        if client is not None:
            client.close()
        if worker.recorder is not None:
            worker.recorder.close()
        out = {"steps": worker.records, "error": error}
        Path(spec.result_path).write_text(json.dumps(out, default=str))
