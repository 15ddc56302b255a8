"""Records written by the previous schemas (before the Get kind) still decode."""

from __future__ import annotations

import io

import fastavro
from fastavro.schema import load_schema

from oncelog.schemas.codec import HISTORY_DIR, MAGIC, decode_decision, decode_request
from oncelog.schemas.codec import schema_fingerprint as fingerprint
from oncelog.schemas.convert import decision_to_avro, request_to_avro
from oncelog.schemas.models import Claim, Decision, Effect, Kind, Outcome, Request


def _old_bytes(schema_file: str, datum: dict[str, object]) -> bytes:
    schema = load_schema(str(HISTORY_DIR / schema_file))
    buf = io.BytesIO()
    buf.write(MAGIC + fingerprint(schema))
    fastavro.schemaless_writer(buf, schema, datum)
    return buf.getvalue()


def test_a_request_of_the_v1_schema_decodes() -> None:
    claim = Claim("tool", b"{}", "0" * 64, 60_000, 1_000, Effect.PURE, "w")
    request = Request("r1", "op", "run", "k", "tok", claim)
    assert decode_request(_old_bytes("request.v1.avsc", request_to_avro(request))) == request


def test_a_decision_of_the_v1_schema_decodes() -> None:
    decision = Decision(
        request_id="r1", operation_id="op", kind=Kind.CLAIM, outcome=Outcome.STATE_ABSENT,
        changed=False, log_time_ms=5, source_partition=1, source_offset=2,
    )  # fmt: skip
    old = _old_bytes("decision.v1.avsc", decision_to_avro(decision))
    assert decode_decision(old) == decision
