"""A claim+complete load in a process of its own, run by either release's Python.

Usage: ``python -m drills.upgrade.load NAME OUT_DIR [--threads N] [--rivals]``, with the broker and
topics in the ``ONCELOG_*`` environment. It imports only what both releases have (the SDK's
blocking client and :mod:`drills.history`), so the drill runs it with the previous
release's virtualenv as well as with this one. Each thread records its calls in
``OUT_DIR/NAME-N.history.jsonl``; each acknowledged completion is a line of
``OUT_DIR/NAME.acks.jsonl``; SIGTERM stops it after the calls in flight, and it writes
``OUT_DIR/NAME.summary.json``.
"""

from __future__ import annotations

import argparse
import json
import signal
import threading
from collections import Counter
from pathlib import Path
from typing import Any, TextIO

from drills.history.client import RecordingClient
from drills.history.record import Recorder
from oncelog.errors import LedgerError
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.results import ClaimStatus
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings

MODULE = "drills.upgrade.load"
TIMEOUTS = Timeouts(total_s=120, resend_after_s=5)


class Load:
    """Threads of sequential claim+complete cycles until :attr:`stop` is set."""

    def __init__(self, name: str, out: Path, acks: TextIO, rivals: bool) -> None:
        self.name, self.out, self.acks, self.rivals = name, out, acks, rivals
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.completed = 0
        self.typed_errors: Counter[str] = Counter()
        self.untyped_errors: list[str] = []
        self.wrong_answers: list[str] = []

    def run(self, n: int) -> None:
        """One thread: its own client and history file."""
        recorder = Recorder(self.out / f"{self.name}-{n}.history.jsonl")
        settings = Settings()
        with SyncLedgerClient(settings, worker_id=f"{self.name}-{n}", timeouts=TIMEOUTS) as c:
            calls = RecordingClient(c, recorder)
            try:
                i = 0
                while not self.stop.is_set():
                    self._cycle(calls, f"{self.name}-{n}-{i % 13}", f"op-{n}-{i}", i)
                    i += 1
            finally:
                recorder.close()

    def _cycle(self, calls: RecordingClient, channel: str, key: str, i: int) -> None:
        try:
            claim = calls.claim(channel, key, tool_name="t", params={"i": i})
            if claim.status != ClaimStatus.CLAIMED:
                self.wrong_answers.append(f"{channel}/{key}: {claim.status}")
                return
            if self.rivals and i % 4 == 0:  # a rival's claim while held: in_progress
                rival = calls.claim(channel, key, tool_name="t", params={"i": i})
                if rival.status != ClaimStatus.IN_PROGRESS:
                    self.wrong_answers.append(f"{channel}/{key} rival: {rival.status}")
            calls.complete(claim.execution, claim.claim_token, {"i": i})
            with self.lock:
                self.acks.write(json.dumps([channel, key]) + "\n")
                self.completed += 1
        except LedgerError as exc:
            self.typed_errors[exc.code] += 1
        except Exception as exc:  # an untyped error is a finding
            self.untyped_errors.append(f"{type(exc).__name__}: {exc}")

    def summary(self) -> dict[str, Any]:
        """What the load did, for the drill."""
        return {"completed": self.completed, "typed_errors": dict(self.typed_errors),
                "untyped_errors": self.untyped_errors[:20],
                "wrong_answers": self.wrong_answers[:20]}  # fmt: skip


def main(argv: list[str] | None = None) -> None:
    """Run the load until SIGTERM, then write the summary."""
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}")
    parser.add_argument("name")
    parser.add_argument("out", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rivals", action="store_true", help="contest every 4th claim")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / f"{args.name}.acks.jsonl").open("a", buffering=1) as acks:
        load = Load(args.name, args.out, acks, args.rivals)
        signal.signal(signal.SIGTERM, lambda _signum, _frame: load.stop.set())
        threads = [threading.Thread(target=load.run, args=(n,)) for n in range(args.threads)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    (args.out / f"{args.name}.summary.json").write_text(json.dumps(load.summary()))


if __name__ == "__main__":
    main()
