"""A history recorder: each ledger call as its client saw it, one JSON line per event.

A call is written before it is sent (``call``) and its answer when it comes (``return``),
both stamped with ``time.monotonic_ns()``: CLOCK_MONOTONIC is one clock for every process
of the machine, so histories of processes that kill and replace each other merge. A call
with no ``return`` line (its process died, or the answer never came) is unknown: it may or
may not have taken effect. Tokens are written as fingerprints, never as capabilities.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from oncelog.errors import LedgerError
from oncelog.identity.tokens import token_fingerprint

T = TypeVar("T")

#: Error codes that are answers (the ledger decided): the status the model knows them by.
#: Any other error (a timeout, a broker down) leaves the call unknown.
ANSWERS: dict[str, str] = {
    "stale_claim": "stale",
    "lease_lost": "stale",
    "cancelled": "stale",
    "conflict": "conflict",
    "invalid_state": "state",
    "result_expired": "result_expired",
    "execution_failed": "failed",
}


def canonical(value: Any) -> str:
    """A result as the model compares it: canonical JSON."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def claim_hash(tool_name: str, params: Mapping[str, Any], dedup: Sequence[str] | None) -> str:
    """A stand-in for a claim's request hash, known before the call: same tool and dedup
    fields, same stand-in (the model only compares them)."""
    kept = {k: params[k] for k in (dedup if dedup is not None else params) if k in params}
    return hashlib.sha256(canonical([tool_name, kept]).encode()).hexdigest()[:16]


class Recorder:
    """Appends one process's calls to ``path`` (JSON lines, written through at once)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file = path.open("a", buffering=1)  # line-buffered: a SIGKILL loses no line
        self._ids = itertools.count()
        self._prefix = path.name

    def close(self) -> None:
        """Close the file."""
        self._file.close()

    def _write(self, event: dict[str, Any]) -> None:
        self._file.write(json.dumps(event, separators=(",", ":")) + "\n")

    def call(self, op: str, kind: str, token: str, **payload: Any) -> str:
        """Note a call about to be sent; the id to give its answer."""
        call_id = f"{self._prefix}:{next(self._ids)}"
        inputs = {"kind": kind, "token": token_fingerprint(token), **payload}
        self._write({"e": "call", "id": call_id, "op": op, "input": inputs,
                     "t": time.monotonic_ns()})  # fmt: skip
        return call_id

    def answer(self, call_id: str, status: str, epoch: int = 0, result: str = "") -> None:
        """Note the answer the call read."""
        output = {"status": status, "epoch": epoch, "result": result}
        self._write({"e": "return", "id": call_id, "output": output, "t": time.monotonic_ns()})

    def lost(self, call_id: str, error: str) -> None:
        """Note that no answer came (the call stays unknown; the error is kept to read)."""
        self._write({"e": "lost", "id": call_id, "error": error, "t": time.monotonic_ns()})

    def around(
        self, call_id: str, run: Callable[[], T], read: Callable[[T], tuple[str, int, str]]
    ) -> T:
        """Run the call; note its answer, its answering error, or that none came."""
        try:
            value = run()
        except LedgerError as exc:
            status = ANSWERS.get(exc.code)
            if status is None:
                self.lost(call_id, exc.code)
            else:
                self.answer(call_id, status)
            raise
        self.answer(call_id, *read(value))
        return value


def load(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """The operations of several recorders' files, one client number per file: each with
    ``client``, ``op``, ``input``, ``call`` and ``output``/``return`` (None when unknown)."""
    operations: list[dict[str, Any]] = []
    for client, path in enumerate(sorted(paths)):
        calls: dict[str, dict[str, Any]] = {}
        for line in path.read_text().splitlines():
            if not line.endswith("}"):
                continue  # a line cut short by a kill is no event
            event = json.loads(line)
            if event["e"] == "call":
                calls[event["id"]] = {"client": client, "op": event["op"],
                                      "input": event["input"], "call": event["t"],
                                      "output": None, "return": None}  # fmt: skip
            elif event["e"] == "return" and event["id"] in calls:
                calls[event["id"]].update(output=event["output"], **{"return": event["t"]})
        operations.extend(calls.values())
    return operations
