"""The checked-in writers are exactly what the generator writes for the package's schemas.

``oncelog/schemas/record_writers.py`` is the generated writers as a file, so that mypyc
compiles it; it must never drift into a second, hand-kept writer.
"""

from __future__ import annotations

from oncelog.referee.fold import fold
from oncelog.schemas import record_writer, record_writers
from oncelog.schemas.codec import HEADER_LEN, encode_decision, encode_request
from oncelog.schemas.models import Claim, Effect, Request


def test_the_checked_in_writers_are_the_generators_output() -> None:
    expected = record_writer.module_source(record_writer.WRITERS, record_writer.WRITERS_TAIL)
    written = record_writer.GENERATED.read_text(encoding="utf-8")
    assert written == expected, "run: python -m oncelog.schemas.record_writer"


def test_the_generated_module_writes_what_the_exec_d_writer_writes() -> None:
    claim = Claim("charge", b"{}", "h" * 64, 30_000, 60_000, Effect.PURE, "w1")
    request = Request("r1", "op1", "c1", "k1", "tok", claim)
    spec = record_writer.WRITERS[2]  # the previous layout: a request without an approval
    exec_d = record_writer.compile_writer(spec.schema, unmemoized=spec.unmemoized)
    assert record_writers.previous_request(request) == exec_d(request)
    assert encode_request(request)[HEADER_LEN:] == exec_d(request)


def test_the_codec_writes_decisions_with_the_generated_module() -> None:
    claim = Claim("charge", b"{}", "h" * 64, 30_000, 60_000, Effect.PURE, "w1")
    state, decision = fold(None, Request("r1", "op1", "c1", "k1", "tok", claim), 1_000)
    assert state is not None
    data = encode_decision(decision)
    assert data.endswith(record_writers.previous_decision(decision))
