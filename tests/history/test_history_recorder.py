"""The history recorder: calls and answers on one clock, unknown calls kept as unknown."""

from __future__ import annotations

from pathlib import Path

import pytest

from drills.history.record import Recorder, load
from oncelog.errors import LedgerTimeoutError, StaleClaimError
from oncelog.identity.tokens import token_fingerprint


def _raise(exc: Exception) -> None:
    raise exc


def test_calls_answers_errors_and_lost_answers(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "a.history.jsonl")
    ok = rec.call("c/step-1", "claim", "tok-a", hash="h")
    assert rec.around(ok, lambda: 7, lambda v: ("claimed", v, "")) == 7
    fenced = rec.call("c/step-1", "complete", "tok-a", result="r")
    with pytest.raises(StaleClaimError):
        rec.around(fenced, lambda: _raise(StaleClaimError("fenced")), lambda _: ("x", 0, ""))
    timed_out = rec.call("c/step-1", "heartbeat", "tok-a")
    with pytest.raises(LedgerTimeoutError):
        rec.around(timed_out, lambda: _raise(LedgerTimeoutError("t")), lambda _: ("x", 0, ""))
    rec.call("c/step-1", "release", "tok-a")  # the process dies here: no answer
    rec.close()
    with (tmp_path / "a.history.jsonl").open("a") as f:
        f.write('{"e":"call","id":"cut')  # a line a kill cut short
    claim, complete, heartbeat, release = load([tmp_path / "a.history.jsonl"])

    assert claim["input"] == {"kind": "claim", "token": token_fingerprint("tok-a"), "hash": "h"}
    assert claim["output"] == {"status": "claimed", "epoch": 7, "result": ""}
    assert claim["call"] <= claim["return"] <= complete["call"]
    assert complete["output"]["status"] == "stale"  # an answering error is an answer
    for unknown in (heartbeat, release):  # a timeout, and a call that never returned
        assert (unknown["output"], unknown["return"]) == (None, None)


def test_each_file_is_a_client_and_the_clock_is_shared(tmp_path: Path) -> None:
    first, second = Recorder(tmp_path / "1.jsonl"), Recorder(tmp_path / "2.jsonl")
    a = first.call("op", "claim", "t1", hash="h")
    b = second.call("op", "claim", "t2", hash="h")
    second.answer(b, "in_progress", 1)
    first.answer(a, "claimed", 1)
    first.close()
    second.close()
    ops = load([tmp_path / "2.jsonl", tmp_path / "1.jsonl"])
    assert sorted(o["client"] for o in ops) == [0, 1]
    one = next(o for o in ops if o["input"]["token"] == token_fingerprint("t1"))
    two = next(o for o in ops if o["input"]["token"] == token_fingerprint("t2"))
    assert one["call"] < two["call"] < two["return"] < one["return"]
