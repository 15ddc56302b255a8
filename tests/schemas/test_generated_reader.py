"""The checked-in request reader is exactly what the generator writes for request.avsc.

``oncelog/schemas/request_reader.py`` is the generated reader as a file, so that mypyc
compiles it; it must never drift into a second, hand-kept reader.
"""

from __future__ import annotations

from oncelog.schemas import codec, inline_reader, layout, previous, request_reader
from oncelog.schemas import request_reader_previous as reader_previous
from oncelog.schemas.codec import encode_request
from oncelog.schemas.models import ApprovalPolicy, Claim, Effect, Request


def test_the_checked_in_readers_are_the_generators_output() -> None:
    expected = inline_reader.module_source(layout.CURRENT[layout.REQUEST], "request.avsc")
    written = (layout.SCHEMA_DIR / "request_reader.py").read_text(encoding="utf-8")
    assert written == expected, "run: python -m oncelog.schemas.inline_reader"
    expected = inline_reader.module_source(previous.REQUEST_SCHEMA, "history/request.v5.avsc")
    written = (layout.SCHEMA_DIR / "request_reader_previous.py").read_text(encoding="utf-8")
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
