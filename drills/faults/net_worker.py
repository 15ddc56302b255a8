"""One load process of the network drill: claim+complete cycles through the clients' proxy.

``python -m drills.faults.net_worker --bootstrap HOST:PORT --prefix P --partitions N
--worker I --out FILE --stop FILE`` runs until FILE ``--stop`` exists. Two cycles alternate:
a fresh key (claim, complete) and a contended one (keys every worker claims within the
same few seconds, with 1 s leases, sometimes abandoned so that others reclaim them). Each
call's outcome is one JSON line of ``--out`` (see :class:`drills.faults.net_calls.Call`).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import IO, Any

from drills.history.client import RecordingClient
from drills.history.record import Recorder
from oncelog.errors import LedgerError
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.results import Claim, Execution
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings

_CONTENDED_KEYS = 6  # claimed by every worker within one window
_WINDOW_S = 4.0  # a contended key's lifetime: then the next window's keys


def main() -> None:
    """Parse the options and run the cycles until the stop file exists."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--prefix", required=True)
    parser.add_argument("--partitions", type=int, required=True)
    parser.add_argument("--worker", type=int, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--stop", type=Path, required=True)
    parser.add_argument("--total-s", type=float, default=5.0)
    parser.add_argument("--resend-s", type=float, default=1.0)
    parser.add_argument("--pace-s", type=float, default=0.0,
                        help="at least this long from one cycle's start to the next's")  # fmt: skip
    parser.add_argument("--history", type=Path, default=Path(os.devnull),
                        help="where to record the calls for the history check")  # fmt: skip
    args = parser.parse_args()
    settings = Settings(
        bootstrap_servers=args.bootstrap, topic_prefix=args.prefix, partitions=args.partitions
    )
    timeouts = Timeouts(total_s=args.total_s, resend_after_s=args.resend_s)
    worker = f"net-{args.worker}"
    with (
        SyncLedgerClient(settings, worker_id=worker, timeouts=timeouts) as client,
        args.out.open("a", buffering=1) as out,
    ):
        calls = RecordingClient(client, Recorder(args.history))
        try:
            _Cycles(calls, worker, out, args.pace_s).run(args.stop)
        finally:
            calls.recorder.close()


class _Cycles:
    def __init__(self, calls: RecordingClient, worker: str, out: IO[str], pace_s: float) -> None:
        self.calls = calls
        self.pace_s = pace_s
        self.worker = worker
        self.out = out

    def run(self, stop: Path) -> None:
        i = 0
        while not stop.exists():
            began = time.monotonic()
            if i % 2 == 0:
                self.cycle(f"{self.worker}-ch{i % 11}", f"k{i}", lease_s=60, abandon=False)
            else:
                window = int(time.time() / _WINDOW_S)
                key = f"w{window}-{(i // 2) % _CONTENDED_KEYS}"
                self.cycle("contended", key, lease_s=1, abandon=i % 4 == 1)
            i += 1
            # The soak's steady rate: a schedule, not a synchronisation.
            time.sleep(max(0.0, began + self.pace_s - time.monotonic()))

    def cycle(self, channel: str, key: str, *, lease_s: float, abandon: bool) -> None:
        claim = self.call(
            "claim",
            channel,
            key,
            lambda: self.calls.claim(
                channel, key, tool_name="t", params={"k": key}, lease_seconds=lease_s
            ),
        )
        if isinstance(claim, Claim) and claim.owned and not abandon:
            token = claim.claim_token
            self.call(
                "complete",
                channel,
                key,
                lambda: self.calls.complete(claim.execution, token, {"k": key}),
            )

    def call(self, kind: str, channel: str, key: str, fn: Any) -> Any:
        line: dict[str, Any] = {"w": self.worker, "kind": kind, "ch": channel, "key": key}
        line["t0"] = time.monotonic()
        answer: Any = None
        try:
            answer = fn()
        except LedgerError as exc:
            line["code"] = exc.code
        except Exception as exc:  # an untyped error is a finding
            line["untyped"] = f"{type(exc).__name__}: {exc}"
        line["t1"] = time.monotonic()
        line.update(_answer(answer))
        self.out.write(json.dumps(line) + "\n")
        return answer


def _answer(answer: Any) -> dict[str, Any]:
    """What the caller was told, and where the request it was told about sits on the log."""
    if isinstance(answer, Claim):
        decision = answer.decision
        where = None if decision is None else [decision.source_partition, decision.source_offset]
        request = None if decision is None else decision.request_id
        return {"status": str(answer.status), "epoch": answer.execution.epoch,
                "op": answer.execution.id, "pos": where, "req": request}  # fmt: skip
    if isinstance(answer, Execution):
        where = None if answer.position is None else list(answer.position)
        return {"status": answer.status, "epoch": answer.epoch, "op": answer.id,
                "pos": where}  # fmt: skip
    return {}


if __name__ == "__main__":
    main()
