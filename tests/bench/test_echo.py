"""Pure logic of ``bench/bench_echo.py``: the bytes the echo answers with, and the pacing."""

from __future__ import annotations

import argparse
import time

import pytest

from bench import bench_echo
from oncelog.schemas.codec import decode_decision, decode_request, decode_snapshot
from oncelog.schemas.models import Claim, Complete, Outcome


def test_the_echo_answers_with_a_claims_and_a_completions_real_records() -> None:
    records = {k: [bytes.fromhex(h) for h in v] for k, v in bench_echo._records().items()}
    claim, complete = (decode_request(b) for b in records["request"])
    assert type(claim.body) is Claim
    assert type(complete.body) is Complete
    decisions = [decode_decision(b) for b in records["decision"]]
    assert [d.outcome for d in decisions] == [Outcome.CLAIMED, Outcome.COMPLETED]
    snapshots = [decode_snapshot(b) for b in records["snapshot"]]
    assert [s.state.version for s in snapshots] == [1, 2]


class _Instant:
    """Answers every request sent so far at the next look."""

    def __init__(self) -> None:
        self.sent = 0
        self.most_in_flight = 0
        self._unanswered: list[bytes] = []

    def send(self, *, alone: bool, stamped: bool = False) -> bytes:
        key = str(self.sent).encode()
        self.sent += 1
        self._unanswered.append(key)
        self.most_in_flight = max(self.most_in_flight, len(self._unanswered))
        return key

    def answers(self, wait_s: float = 0.05) -> list[bytes]:
        out, self._unanswered = self._unanswered, []
        return out

    def echo_ns(self, key: bytes) -> int | None:
        return None


def test_in_flight_keeps_the_width_and_answers_each_with_the_next_request() -> None:
    client = _Instant()
    answered = bench_echo.in_flight(client, 8, 0.05)
    assert answered > 8
    assert client.most_in_flight == 8
    assert client.sent == answered  # the stand-in answered each, the last ones too


def test_a_paced_window_sends_no_more_than_its_rate_allows() -> None:
    client = _Instant()
    bench_echo.in_flight(client, 4, 0.2, rate=500.0)
    assert 4 < client.sent <= 4 + int(0.2 * 500) + 1
    assert client.most_in_flight <= 4


def test_sequential_waits_for_each_answer_in_turn() -> None:
    client = _Instant()
    times, first_hops = bench_echo.sequential(client, 5)
    assert len(times) == 5
    assert client.sent == 5
    assert first_hops == []  # the stand-in stamps nothing


def test_spend_takes_the_threads_cpu_it_is_given() -> None:
    began = time.thread_time_ns()
    bench_echo.spend(2000.0)
    assert time.thread_time_ns() - began >= 2_000_000
    began = time.thread_time_ns()
    bench_echo.spend(0.0)
    assert time.thread_time_ns() - began < 1_000_000


def test_work_us_reads_the_echos_and_the_clients_share() -> None:
    assert bench_echo._work_us("20") == (20.0, 0.0)
    assert bench_echo._work_us("20,5.5") == (20.0, 5.5)
    for bad in ("x", "-1", "1,2,3", "1,-2", "nan", "1,inf"):
        with pytest.raises(argparse.ArgumentTypeError):
            bench_echo._work_us(bad)
