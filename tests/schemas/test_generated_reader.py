"""The checked-in readers are exactly what the generator writes for request.avsc and
decision.avsc, and for their previous release's layouts.

``oncelog/schemas/request_reader.py`` (and the other three) is a generated reader as a
file, so that mypyc compiles it; it must never drift into a second, hand-kept reader.
"""

from __future__ import annotations

import pytest

from oncelog.referee.fold import fold
from oncelog.schemas import (
    codec,
    decision_reader,
    decision_reader_previous,
    inline_reader,
    layout,
    request_reader,
)
from oncelog.schemas import request_reader_previous as reader_previous
from oncelog.schemas.codec import encode_decision, encode_request
from oncelog.schemas.models import ApprovalPolicy, Claim, Effect, Request

CHECKED_IN = inline_reader.generated_modules()


@pytest.mark.parametrize(("name", "schema", "avsc"), CHECKED_IN, ids=[c[0] for c in CHECKED_IN])
def test_the_checked_in_readers_are_the_generators_output(
    name: str, schema: object, avsc: str
) -> None:
    expected = inline_reader.module_source(schema, avsc)
    written = (layout.SCHEMA_DIR / f"{name}.py").read_text(encoding="utf-8")
    assert written == expected, "run: python -m oncelog.schemas.inline_reader"


def test_the_generated_module_reads_what_the_codec_writes() -> None:
    claim = Claim("charge", b"{}", "h" * 64, 30_000, 60_000, Effect.PURE, "w1")
    request = Request("r1", "op1", "c1", "k1", "tok", claim)
    data = encode_request(request)  # nothing of approvals in it: the previous layout
    assert reader_previous.read(data, codec.HEADER_LEN) == request
    assert codec.decode_request(data) == request
    asking = request._replace(approval=ApprovalPolicy(60_000))
    data = encode_request(asking)  # the current layout
    assert request_reader.read(data, codec.HEADER_LEN) == asking
    assert codec.decode_request(data) == asking


def test_the_generated_decision_modules_read_what_the_codec_writes() -> None:
    claim = Claim("charge", b"{}", "h" * 64, 30_000, 60_000, Effect.PURE, "w1")
    request = Request("r1", "op1", "c1", "k1", "tok", claim)
    decision = fold(None, request, 1_700_000_000_000)[1]
    data = encode_decision(decision)  # nothing of approvals in it: the previous layout
    assert data.startswith(codec._PREV_DECISION_HEADER)
    assert decision_reader_previous.read(data, codec.HEADER_LEN) == decision
    assert codec.decode_decision(data) == decision
    asking = request._replace(approval=ApprovalPolicy(60_000))
    decision = fold(None, asking, 1_700_000_000_000)[1]
    data = encode_decision(decision)  # an approval's outcome: the current layout
    assert data.startswith(codec._DECISION_HEADER)
    assert decision_reader.read(data, codec.HEADER_LEN) == decision
    assert codec.decode_decision(data) == decision
