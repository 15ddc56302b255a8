"""The HTTP link: a reader of ``serve``'s query API through its proxy, call after call.

Every 0.2 s it asks ``GET /v1/positions`` with a timeout, and counts the answers, the
failures (refused, reset, timed out: what a network fault may cost an HTTP caller) and
the calls that outlived their timeout (hung: what a fault must never cost).
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field

from drills.faults.net_calls import HUNG_GRACE_S

HTTP_TIMEOUT_S = 3.0
_PACE_S = 0.2


@dataclass
class HttpReader:
    """Sequential reads of ``url`` on one thread, until stopped."""

    url: str
    answered: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    hung: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        """Start reading."""
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def finish(self) -> None:
        """Stop after the read in flight (bounded by its timeout)."""
        self.stop.set()
        if self._thread is not None:
            self._thread.join(timeout=HTTP_TIMEOUT_S * 3)

    def _run(self) -> None:
        while not self.stop.is_set():
            began = time.monotonic()
            try:
                with urllib.request.urlopen(self.url, timeout=HTTP_TIMEOUT_S) as answer:
                    answer.read()
                self.answered += 1
            except urllib.error.HTTPError as exc:  # an answer: serve's, e.g. 503 while cut off
                self.failures[f"HTTP {exc.code}"] += 1
            except OSError as exc:  # no answer: refused, reset, timed out
                self.failures[type(exc).__name__] += 1
            took = time.monotonic() - began
            if took > HTTP_TIMEOUT_S + HUNG_GRACE_S:
                self.hung.append(f"GET {self.url} took {took:.1f} s")
            self.stop.wait(_PACE_S)
