"""Claims on every requests partition, all the time: when do claims succeed again after a fault?

One thread and one client per partition, each claiming a fresh key on a channel that
lives on its partition, one claim after another. The recovery after a fault at ``t0`` is
the time until, on every partition, a claim sent after ``t0`` was granted.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from oncelog.errors import LedgerError
from oncelog.identity.partitioner import partition_for
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.results import ClaimStatus
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings
from oncelog.waiting import poll_until

#: Short calls: a claim that cannot be decided fails in 2 s and the next one is sent.
PROBE_TIMEOUTS = Timeouts(total_s=2.0, resend_after_s=0.5)
_PACE_S = 0.1  # between two claims of one partition: a 0.1 s resolution, a light load


def channel_on(partition: int, partitions: int, prefix: str = "probe") -> str:
    """A channel id whose requests go to ``partition``."""
    n = 0
    while partition_for(f"{prefix}-{n}", partitions) != partition:
        n += 1
    return f"{prefix}-{n}"


@dataclass
class Probe:
    """Sequential claims on each partition; what was granted when, and what failed how."""

    settings: Settings
    granted: dict[int, list[tuple[float, float]]] = field(
        default_factory=lambda: defaultdict(list)
    )  # partition -> (sent, answered) of each granted claim, monotonic seconds
    typed_errors: Counter[str] = field(default_factory=Counter)
    untyped_errors: list[str] = field(default_factory=list)
    wrong_answers: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        """One claiming thread per partition of the requests topic."""
        for partition in range(self.settings.partitions):
            thread = threading.Thread(target=self._run, args=(partition,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def finish(self) -> None:
        """Stop after the claims in flight (each bounded by its timeout)."""
        self.stop.set()
        for thread in self._threads:
            thread.join(timeout=60)

    def recovered_after(self, t0: float, timeout_s: float = 180.0) -> float | None:
        """Seconds from ``t0`` until every partition granted a claim sent after ``t0``;
        None when that did not happen within ``timeout_s``."""

        def last_first_grant() -> float | None:
            firsts = [self._first_grant_after(p, t0) for p in range(self.settings.partitions)]
            if all(f is not None for f in firsts):
                return max(f for f in firsts if f is not None)
            return None

        last = poll_until(time.monotonic() + timeout_s, last_first_grant, sleep=self.stop.wait)
        return None if last is None else last - t0

    def granted_between(self, start: float, end: float) -> int:
        """Claims sent in [start, end] that were granted."""
        return sum(start <= sent <= end for calls in self.granted.values() for sent, _ in calls)

    def _first_grant_after(self, partition: int, t0: float) -> float | None:
        answered = [done for sent, done in list(self.granted[partition]) if sent >= t0]
        return min(answered) if answered else None

    def _run(self, partition: int) -> None:
        channel = channel_on(partition, self.settings.partitions)
        worker = f"probe-{partition}"
        with SyncLedgerClient(self.settings, worker_id=worker, timeouts=PROBE_TIMEOUTS) as c:
            i = 0
            while not self.stop.is_set():
                sent = time.monotonic()
                try:
                    claim = c.claim_execution(channel, f"k-{i}", tool_name="probe", params={})
                except LedgerError as exc:
                    self.typed_errors[exc.code] += 1
                except Exception as exc:  # an untyped error is a finding
                    self.untyped_errors.append(f"{type(exc).__name__}: {exc}")
                else:
                    if claim.status != ClaimStatus.CLAIMED:  # a fresh key: anything else is wrong
                        self.wrong_answers.append(f"{channel}/k-{i}: {claim.status}")
                    else:  # only a grant counts towards the recovery
                        self.granted[partition].append((sent, time.monotonic()))
                i += 1
                self.stop.wait(_PACE_S)
