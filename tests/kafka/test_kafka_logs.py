"""librdkafka's lines go through Python logging under ``oncelog.kafka``, rate-limited,
and stay off the console unless the application configures logging."""

from __future__ import annotations

import logging
import re
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from oncelog.kafka.logs import LOGGER_NAME, RateLimit

# A consumer of oncelog's on a port where nothing listens: librdkafka reports each failed
# connection (FAIL, level 3) until the bounded loop ends; it prints them itself otherwise.
_OUTAGE = """
import logging, sys, time
from oncelog.kafka.reader import plain_consumer
from oncelog.net import free_port
{setup}
consumer = plain_consumer({{"bootstrap.servers": f"127.0.0.1:{{free_port()}}",
                           "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 50}})
consumer.subscribe(["t"])
deadline = time.monotonic() + 20
while time.monotonic() < deadline and {until}:
    consumer.poll(0.1)
consumer.close()
"""
_COUNTING = """
seen = []
class Count(logging.Handler):
    def emit(self, record): seen.append(record.getMessage())
logging.getLogger("oncelog.kafka").addHandler(Count())
logging.getLogger("oncelog.kafka").setLevel(logging.INFO)
"""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=90, check=True
    )


def test_an_outage_prints_nothing_without_logging_configured() -> None:
    # Long enough for several connection failures, which librdkafka alone would print.
    code = _OUTAGE.format(setup="polls = iter(range(30))", until="next(polls, None) is not None")
    assert _run(code).stderr == ""


def test_an_application_that_logs_gets_the_lines_under_oncelog_kafka() -> None:
    setup = "logging.basicConfig(format='%(name)s %(levelname)s %(message)s')" + _COUNTING
    code = _OUTAGE.format(setup=setup, until="not seen") + "print(len(seen))"
    done = _run(code)
    lines = [line for line in done.stderr.splitlines() if line]
    assert lines, "no librdkafka line reached logging"
    assert all(line.startswith(f"{LOGGER_NAME} ") for line in lines), lines
    assert any("Connect to" in line or "FAIL" in line for line in lines), lines


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _record(facility: str, level: int = logging.ERROR) -> logging.LogRecord:
    return logging.LogRecord(
        LOGGER_NAME, level, "rdkafka", 0, "%s [%s] %s", (facility, "rdkafka#c-1", "x"), None
    )


def _reported(record: logging.LogRecord) -> int:
    found = re.search(r"\[(\d+) similar lines suppressed\]", str(record.msg))
    return int(found.group(1)) if found else 0


@given(
    events=st.lists(
        st.tuples(st.floats(min_value=0, max_value=5), st.sampled_from(["FAIL", "ERROR"])),
        max_size=200,
    )
)
def test_each_facility_passes_a_burst_per_window_and_reports_every_line_it_drops(
    events: list[tuple[float, str]],
) -> None:
    burst, window = 3, 10.0
    clock = _Clock()
    limit = RateLimit(burst=burst, window_s=window, clock=clock)
    passed: dict[str, list[float]] = {"FAIL": [], "ERROR": []}
    dropped = dict.fromkeys(passed, 0)
    reported = dict.fromkeys(passed, 0)
    for step, facility in events:
        clock.now += step
        record = _record(facility)
        if limit.filter(record):
            passed[facility].append(clock.now)
            reported[facility] += _reported(record)
        else:
            dropped[facility] += 1
    clock.now += window  # a last line per facility, a window later, reports what is left
    for facility in passed:
        last = _record(facility)
        assert limit.filter(last)
        reported[facility] += _reported(last)
    for facility, times in passed.items():
        assert reported[facility] == dropped[facility]  # every dropped line is counted once
        n = sum(1 for _, f in events if f == facility)
        assert len(times) >= min(n, burst)  # the first lines always pass
        for start in times:  # any span of one window holds at most two windows' bursts
            assert sum(1 for t in times if start <= t < start + window) <= 2 * burst
