"""The clock drill's clients: holders that heartbeat, rivals that claim their operations.

A holder claims an operation (an ``external`` step), heartbeats every ``beat_s`` for a
round, then completes it and starts the next. A rival claims the holder's current
operation with tokens of its own all the time: the answer should be ``in_progress``.
A ``reclaimed`` answer while the holder heartbeats is a spurious reclaim: the rival
runs the step too (it completes it) and the holder, fenced, has run it already: a
double. Every call goes through a :class:`~drills.history.client.RecordingClient`.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from drills.history import record
from drills.history.client import RecordingClient
from oncelog.errors import LedgerError
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.results import ClaimStatus
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings

PARAMS = {"charge": 1}


@dataclass
class Reclaim:
    """A rival's grant of an operation a holder worked on."""

    op: str  # channel/key
    phase: str
    since_beat_s: float  # real time since the holder's last acknowledged heartbeat
    outcome_unknown: bool  # the audit's mark on the superseded attempt


@dataclass
class Current:
    """The operation a holder works on, and when its last heartbeat was acknowledged."""

    channel: str = ""
    key: str = ""
    last_beat: float = 0.0
    fenced: bool = False


@dataclass
class Crew:
    """The holders and rivals of one ledger."""

    settings: Settings
    history_dir: Path
    holders: int = 2
    lease_s: float = 10.0
    beat_s: float = 2.0
    round_s: float = 8.0
    rival_every_s: float = 0.5
    phase: str = "healthy"
    reclaims: list[Reclaim] = field(default_factory=list)
    fenced_holders: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    untyped: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    _current: dict[int, Current] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        """One holder thread and one rival thread per holder."""
        self.history_dir.mkdir(parents=True, exist_ok=True)
        for n in range(self.holders):
            self._current[n] = Current()
            for run in (self._hold, self._rival):
                thread = threading.Thread(target=self._client, args=(run, n), daemon=True)
                thread.start()
                self._threads.append(thread)

    def finish(self, timeout_s: float = 120) -> None:
        """Stop after the calls in flight (holders complete their operation)."""
        self.stop.set()
        for thread in self._threads:
            thread.join(timeout=timeout_s)

    def _client(self, run: object, n: int) -> None:
        name = f"{getattr(run, '__name__', 'run').strip('_')}-{n}"
        timeouts = Timeouts(total_s=5.0, resend_after_s=1.0)
        recorder = record.Recorder(self.history_dir / f"{name}.history.jsonl")
        try:
            with SyncLedgerClient(self.settings, worker_id=name, timeouts=timeouts) as c:
                run(RecordingClient(c, recorder), n)  # type: ignore[operator]
        except Exception as exc:  # a client that could not start is a finding
            self.untyped.append(f"{name}: {type(exc).__name__}: {exc}")
        finally:
            recorder.close()

    def _hold(self, calls: RecordingClient, n: int) -> None:
        i = 0
        while not self.stop.is_set():
            try:
                self._round(calls, n, f"clock-{n}", f"op-{n}-{i}")
            except LedgerError as exc:
                self.errors[exc.code] += 1
            except Exception as exc:  # an untyped error is a finding
                self.untyped.append(f"holder {n}: {type(exc).__name__}: {exc}")
            i += 1

    def _round(self, calls: RecordingClient, n: int, channel: str, key: str) -> None:
        """Claim, heartbeat for a round (stop when fenced), complete."""
        claim = calls.claim(
            channel, key, tool_name="charge", params=PARAMS, lease_seconds=self.lease_s
        )
        if claim.status not in (ClaimStatus.CLAIMED, ClaimStatus.RECLAIMED):
            return
        with self._lock:
            self._current[n] = Current(channel, key, time.monotonic())
        ends = time.monotonic() + self.round_s
        while time.monotonic() < ends and not self.stop.wait(self.beat_s):
            try:
                calls.heartbeat(claim.execution, claim.claim_token)
            except LedgerError as exc:
                self.errors[exc.code] += 1
                if exc.code == "stale_claim":
                    self.fenced_holders += 1
                    break
                continue
            with self._lock:
                self._current[n].last_beat = time.monotonic()
        try:  # a fenced holder's completion is the audit's evidence of its run
            calls.complete(claim.execution, claim.claim_token, {"by": "holder"})
        except LedgerError as exc:
            self.errors[exc.code] += 1

    def _rival(self, calls: RecordingClient, n: int) -> None:
        while not self.stop.wait(self.rival_every_s):
            with self._lock:
                current = self._current[n]
                channel, key = current.channel, current.key
            if not key:
                continue
            try:
                self._contend(calls, n, channel, key)
            except LedgerError as exc:
                self.errors[exc.code] += 1
            except Exception as exc:  # an untyped error is a finding
                self.untyped.append(f"rival {n}: {type(exc).__name__}: {exc}")

    def _contend(self, calls: RecordingClient, n: int, channel: str, key: str) -> None:
        claim = calls.claim(
            channel, key, tool_name="charge", params=PARAMS, lease_seconds=self.lease_s
        )
        if claim.status != ClaimStatus.RECLAIMED:
            return
        with self._lock:
            since = time.monotonic() - self._current[n].last_beat
        unknown = claim.previous is not None and claim.previous.outcome_unknown
        self.reclaims.append(Reclaim(f"{channel}/{key}", self.phase, since, unknown))
        calls.complete(claim.execution, claim.claim_token, {"by": "rival"})  # it ran too

    def spurious(self) -> list[Reclaim]:
        """Reclaims of a holder whose last heartbeat was acknowledged within its lease."""
        return [r for r in self.reclaims if r.since_beat_s < self.lease_s]

    def histories(self) -> list[Path]:
        """The recorded histories of this crew's clients."""
        return sorted(self.history_dir.glob("*.history.jsonl"))
