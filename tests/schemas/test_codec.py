"""Single-object encoding: round trips, schema evolution, and corrupt input."""

from __future__ import annotations

import io
import struct
from collections.abc import Mapping
from pathlib import Path

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oncelog.errors import CodecError
from oncelog.schemas import codec
from oncelog.schemas.codec import (
    MAGIC,
    REQUEST,
    SchemaRegistry,
    decode_decision,
    decode_request,
    decode_snapshot,
    default_registry,
    encode_decision,
    encode_request,
    encode_snapshot,
    form_fingerprint,
    schema_fingerprint,
)
from oncelog.schemas.models import (
    ApprovalPolicy,
    Body,
    Cancel,
    Claim,
    Complete,
    Decision,
    Effect,
    ExecutionSnapshot,
    ExecutionState,
    Fail,
    Heartbeat,
    Kind,
    Outcome,
    PreviousAttempt,
    RecentRequest,
    Release,
    Request,
    Status,
    Sweep,
)
from tests.budget import examples

OLD_REQUEST = Path(__file__).parent / "old" / "request.v0.avsc"

BODIES: list[Body] = [
    Claim("charge", b'{"a":1}', "ab" * 32, 1_000, 60_000, Effect.EXTERNAL, "w1"),
    Heartbeat(),
    Heartbeat(5_000),
    Complete(b'{"ok":true}'),
    Fail("boom", True),
    Release(),
    Cancel(),
    Cancel("user asked"),
    Sweep(),
]


def _request(body: Body, token: str | None = "tok-é") -> Request:
    return Request("rid", "op-1", "run-42", "step-1", token, body)


def _state() -> ExecutionState:
    return ExecutionState(
        operation_id="op-1",
        channel_id="run-42",
        key_name="step-1",
        status=Status.COMPLETED,
        version=7,
        epoch=2,
        request_hash="cd" * 32,
        tool_name="charge",
        params=b"{}",
        effect=Effect.PURE,
        lease_ms=10_000,
        retention_ms=2**40,
        token_fp="f2",
        worker_id="w2",
        claimed_at_ms=5,
        lease_deadline_ms=10_005,
        last_heartbeat_ms=7,
        cancel_requested=True,
        cancel_reason="why",
        result=b'"r"',
        result_hash="ef" * 32,
        completed_at_ms=9,
        expires_at_ms=2**40 + 9,
        previous=PreviousAttempt(1, "t1", "w1", 1, None, Status.CLAIMED),
        recent=(
            RecentRequest("a", Outcome.RECLAIMED, 2, "fa", "pa", 6),
            RecentRequest("b", Outcome.COMPLETED, 2, "fb", "pb", 9),
        ),
        updated_at_ms=9,
    )


@pytest.mark.parametrize("body", BODIES, ids=lambda b: type(b).__name__)
def test_request_round_trip_for_every_kind(body: Body) -> None:
    request = _request(body)
    data = encode_request(request)
    assert data[:2] == MAGIC
    assert decode_request(data) == request


def test_request_round_trip_without_token() -> None:
    request = _request(Sweep(), token=None)
    assert decode_request(encode_request(request)) == request


def test_snapshot_round_trip() -> None:
    snapshot = ExecutionSnapshot(
        state=_state(),
        source_partition=3,
        source_offset=2**40,
        source_request_id="rid",
        outcome=Outcome.EXPIRED,
        log_time_ms=9,
    )
    assert decode_snapshot(encode_snapshot(snapshot)) == snapshot


@pytest.mark.parametrize("state", [None, _state()])
def test_decision_round_trip(state: ExecutionState | None) -> None:
    decision = Decision(
        request_id="rid",
        operation_id="op-1",
        kind=Kind.CLAIM,
        outcome=Outcome.CONFLICT,
        changed=False,
        log_time_ms=9,
        state=state,
        epoch=2,
        retried=True,
        stored_hash="a",
        request_hash="b",
        result=b"1",
        error="e",
        duplicate_effect_suspected=True,
        previous=PreviousAttempt(1, "t1", "w1", 1, 3, Status.FAILED, "x"),
        source_partition=1,
        source_offset=2,
    )
    assert decode_decision(encode_decision(decision)) == decision


def test_decoders_refuse_another_record_type() -> None:
    data = encode_request(_request(Sweep()))
    with pytest.raises(CodecError, match="expected"):
        decode_snapshot(data)


@pytest.mark.parametrize(
    ("form", "rabin"),
    [
        # Avro's own test data (share/test/data/schema-tests.txt), as signed 64-bit ints.
        ('"null"', 7195948357588979594),
        ('"boolean"', -6970731678124411036),
        ('"int"', 8247732601305521295),
        ('"long"', -3434872931120570953),
        ('"string"', -8142146995180207161),
    ],
)
def test_fingerprints_match_the_avro_spec_vectors(form: str, rabin: int) -> None:
    assert form_fingerprint(form) == struct.pack("<q", rabin)


# What the hand-rolled CRC-64-AVRO table gave before fastavro's took over: every
# record ever written carries one of these, so they must never change.
WIRE_FINGERPRINTS = {
    "checkpoint.avsc": "4fcdee5ac7941c11",
    "history/checkpoint.v1.avsc": "a8c1bf9382e0e83d",
    "decision.avsc": "de8d070aff7cfb35",
    "dev.oncelog.ExecutionState.avsc": "e60aaf046ea797e7",
    "execution_snapshot.avsc": "6290b4141efc2662",
    "history/decision.v1.avsc": "0a8721809393301d",
    "history/decision.v2.avsc": "944bb6e5316d2df0",
    "history/decision.v3.avsc": "4e120beb8b8dbd9f",
    "history/decision.v4.avsc": "ceb8b0f846648229",
    "history/decision.v5.avsc": "bbefa791238f29b0",
    "history/dev.oncelog.ExecutionState.avsc": "bf6e4800c5c613e0",
    "history/execution_snapshot.v1.avsc": "4843f3cbc836bf4f",
    "history/execution_snapshot.v2.avsc": "728f101746798a52",
    "history/execution_snapshot.v3.avsc": "7e8aa767ad9741aa",
    "history/execution_snapshot.v4.avsc": "870e574aedc4d3f7",
    "history/request.v1.avsc": "66f1b13f4e263381",
    "history/request.v2.avsc": "2efafbd955cd3245",
    "history/request.v3.avsc": "0a2415833d419c4c",
    "history/request.v4.avsc": "d385befdd0bab353",
    "history/request.v5.avsc": "7cfd1201ae271821",
    "history/state.v2.avsc": "1c6b220a6a212d86",
    "history/state.v3.avsc": "34c7ab0d5217dcdf",
    "history/state.v4.avsc": "1123ee5f08ba4cbf",
    "request.avsc": "9100c52abcfb867f",
}


def test_every_schema_file_keeps_its_wire_fingerprint() -> None:
    files = {
        str(path.relative_to(codec.SCHEMA_DIR)): path for path in codec.SCHEMA_DIR.rglob("*.avsc")
    }
    assert set(files) == set(WIRE_FINGERPRINTS)
    for name, path in files.items():
        schema = fastavro.schema.load_schema(str(path))
        assert schema_fingerprint(schema).hex() == WIRE_FINGERPRINTS[name], name


def test_fingerprint_prefix_is_the_fingerprint_of_the_canonical_form() -> None:
    schema = codec.REGISTRY.current[REQUEST]
    canonical = fastavro.schema.to_parsing_canonical_form(schema)
    # A request with an approval policy needs the current layout (a plain one: the previous).
    data = encode_request(_request(Sweep())._replace(approval=ApprovalPolicy(60_000)))
    assert (
        data[2:10]
        == form_fingerprint(canonical)
        == bytes.fromhex(WIRE_FINGERPRINTS["request.avsc"])
    )


# --- evolution ---------------------------------------------------------------------


def _write_old(record: Mapping[str, object]) -> tuple[bytes, SchemaRegistry]:
    registry = default_registry()
    fingerprint = registry.register_writer_file(OLD_REQUEST)
    old = registry.writers[fingerprint][1]
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, old, record)
    return MAGIC + fingerprint + buf.getvalue(), registry


def test_old_writer_new_reader_fills_defaults() -> None:
    record: dict[str, object] = {
        "request_id": "rid",
        "operation_id": "op",
        "channel_id": "ch",
        "key_name": "k",
        "claim_token": "tok",
        "body": ("dev.oncelog.Heartbeat", {}),
    }
    data, registry = _write_old(record)
    assert decode_request(data, registry) == Request("rid", "op", "ch", "k", "tok", Heartbeat(None))
    with pytest.raises(CodecError, match="unknown writer schema"):
        decode_request(data)  # the default registry does not know this test-only version


def test_old_writer_unchanged_branch_reads_as_is() -> None:
    record: dict[str, object] = {
        "request_id": "rid",
        "operation_id": "op",
        "channel_id": "ch",
        "key_name": "k",
        "claim_token": None,
        "body": ("dev.oncelog.Cancel", {}),
    }
    data, registry = _write_old(record)
    assert decode_request(data, registry).body == Cancel(None)


# --- corrupt input -----------------------------------------------------------------


def test_bad_magic_is_codec_error_with_length_and_fingerprint() -> None:
    data = b"\x00\x01" + encode_request(_request(Sweep()))[2:]
    with pytest.raises(CodecError) as info:
        decode_request(data)
    assert info.value.length == len(data)
    assert info.value.fingerprint == data[2:10]


def test_unknown_fingerprint_is_codec_error() -> None:
    data = MAGIC + b"\xff" * 8 + b"\x00"
    with pytest.raises(CodecError, match="unknown writer schema") as info:
        decode_request(data)
    assert info.value.fingerprint == b"\xff" * 8


@pytest.mark.parametrize("body", BODIES, ids=lambda b: type(b).__name__)
def test_every_truncation_is_codec_error(body: Body) -> None:
    data = encode_request(_request(body))
    for end in range(len(data)):
        with pytest.raises(CodecError):
            decode_request(data[:end])


def test_trailing_bytes_are_codec_error() -> None:
    with pytest.raises(CodecError, match="trailing"):
        decode_request(encode_request(_request(Sweep())) + b"\x00")


def test_invalid_utf8_is_codec_error() -> None:
    data = encode_request(_request(Sweep(), token=None))
    bad = data.replace(b"run-42", b"run-\xff2")
    with pytest.raises(CodecError):
        decode_request(bad)


_VALID = [encode_request(_request(b)) for b in BODIES]
_HEADER = _VALID[0][:10]


@st.composite
def _mutations(draw: st.DrawFn) -> bytes:
    base = bytearray(draw(st.sampled_from(_VALID)))
    how = draw(st.sampled_from(["flip", "truncate", "splice", "random"]))
    if how == "flip":
        for _ in range(draw(st.integers(1, 4))):
            pos = draw(st.integers(0, len(base) - 1))
            base[pos] = draw(st.integers(0, 255))
    elif how == "truncate":
        base = base[: draw(st.integers(0, len(base)))]
    elif how == "splice":
        pos = draw(st.integers(10, len(base)))
        base[pos:pos] = draw(st.binary(max_size=12))
    else:
        base = bytearray(_HEADER + draw(st.binary(max_size=64)))
    return bytes(base)


@settings(max_examples=examples(10_000), deadline=None)
@given(data=_mutations() | st.binary(max_size=80))
def test_fuzz_decoding_raises_only_codec_error(data: bytes) -> None:
    for decode in (decode_request, decode_snapshot, decode_decision):
        try:
            decode(data)
        except CodecError as exc:  # anything else propagates and fails the test
            error = exc
        else:
            continue
        assert error.length == len(data)
