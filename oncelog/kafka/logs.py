"""librdkafka's own log lines, through Python ``logging`` under ``oncelog.kafka``.

Every client oncelog builds passes :data:`KAFKA_LOGGER` as confluent-kafka's
``logger``: librdkafka's lines (``FAIL``, ``ERROR``, ... with their facility and
client name) become records of that logger, served on the client's own
``poll``/``flush`` calls rather than printed to stderr from librdkafka's threads.

Off the console by default: the logger has a ``NullHandler``, so without
logging configured nothing is printed (Python's last-resort handler stays
silent); an application that configures logging gets them like any other
records. Rate-limited: a broker outage makes each client repeat the same
connection failure several times a second (a 12 s outage printed 68 lines from
one client and 127 from ``serve``), so :class:`RateLimit` lets through a few
lines per facility and level per window and counts the rest, which the next
line that passes reports.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

LOGGER_NAME: Final = "oncelog.kafka"

#: Lines let through per (facility, level) and window, and the window's length.
BURST: Final = 3
WINDOW_S: Final = 60.0


class RateLimit(logging.Filter):
    """Let ``burst`` records per key through per ``window_s``; count the rest.

    The key of a librdkafka record is its level and facility (``FAIL``,
    ``ERROR``, ``REQTMOUT``...), the first of the arguments confluent-kafka logs
    with (``"%s [%s] %s" % (fac, client, message)``). The first record that passes
    after some were dropped says how many (``[N similar lines suppressed]``).
    """

    def __init__(
        self,
        burst: int = BURST,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.burst = burst
        self.window_s = window_s
        self._clock = clock
        self._lock = threading.Lock()
        # key -> (window start, passed in the window, suppressed since the last pass)
        self._windows: dict[tuple[int, str], tuple[float, int, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        """Pass or drop ``record``; a passing one reports the lines dropped before it."""
        key = (record.levelno, _facility(record))
        now = self._clock()
        with self._lock:
            start, passed, dropped = self._windows.get(key, (now, 0, 0))
            if now - start >= self.window_s:
                start, passed = now, 0
            if passed >= self.burst:
                self._windows[key] = (start, passed, dropped + 1)
                return False
            self._windows[key] = (start, passed + 1, 0)
        if dropped:
            record.msg = f"{record.msg} [{dropped} similar lines suppressed]"
        return True


def _facility(record: logging.LogRecord) -> str:
    args = record.args
    if isinstance(args, tuple) and args:
        return str(args[0])
    return str(record.msg)


KAFKA_LOGGER: Final = logging.getLogger(LOGGER_NAME)
KAFKA_LOGGER.addHandler(logging.NullHandler())
KAFKA_LOGGER.addFilter(RateLimit())


def logged(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with librdkafka's lines sent to :data:`KAFKA_LOGGER` (a ``logger``
    the configuration gives wins)."""
    return {"logger": KAFKA_LOGGER, **config}
