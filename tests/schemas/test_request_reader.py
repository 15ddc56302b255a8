"""The Request reader generated from request.avsc agrees with fastavro, or steps
aside; the generated writer writes fastavro's bytes.

On every record fastavro writes with the current schema it must return exactly
what the fastavro path returns; on any other bytes it may only return ``None``
(then the codec asks fastavro) or that same value.
"""

from __future__ import annotations

import io
import json

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oncelog.errors import CodecError
from oncelog.schemas import codec, convert
from oncelog.schemas.codec import (
    REGISTRY,
    REQUEST,
    SchemaRegistry,
    decode_request,
    encode_request,
)
from oncelog.schemas.fast_paths import FastPath
from oncelog.schemas.models import (
    ApprovalPolicy,
    Approve,
    Body,
    Cancel,
    Claim,
    Complete,
    Deny,
    Effect,
    Fail,
    Get,
    Heartbeat,
    Release,
    Request,
    Sweep,
)
from oncelog.schemas.record_writer import write_long
from tests.budget import examples
from tests.schemas.conftest import reader_paths, same_types
from tests.schemas.corruption import corrupt

# The generated codecs of the current layout (a record without approvals takes the previous).
pytestmark = pytest.mark.usefixtures("current_layout")

LONGS = st.integers(-(2**63), 2**63 - 1)
# Mostly short (one-byte lengths), sometimes past 63 bytes (multi-byte lengths).
TEXT = st.text(max_size=5) | st.text(min_size=60, max_size=200)
BLOBS = st.binary(max_size=5) | st.binary(min_size=60, max_size=200)

BODIES: st.SearchStrategy[Body] = st.one_of(
    st.builds(Claim, TEXT, BLOBS, TEXT, LONGS, LONGS, st.sampled_from(Effect), TEXT),
    st.builds(Heartbeat, st.none() | LONGS),
    st.builds(Complete, BLOBS),
    st.builds(Fail, TEXT, st.booleans()),
    st.just(Release()),
    st.builds(Cancel, st.none() | TEXT),
    st.just(Sweep()),
    st.builds(Approve, TEXT, TEXT),
    st.builds(Deny, TEXT, TEXT, TEXT),
)
# Reply partitions: mostly small (one byte), sometimes anywhere in the int range.
REPLY = st.none() | st.integers(0, 63) | st.integers(-(2**31), 2**31 - 1)
APPROVALS = st.none() | st.builds(ApprovalPolicy, LONGS, st.booleans())
REQUESTS = st.builds(
    Request, TEXT, TEXT, TEXT, TEXT, st.none() | TEXT, BODIES, REPLY, st.none() | TEXT, APPROVALS
)


def _fastavro(data: bytes) -> Request:
    """The reference: the fastavro path the codec used before the reader."""
    return codec._decode(REGISTRY, REQUEST, data, convert.request_from_avro)


# The generated Python readers, and the extension's where it is built.
PATHS = reader_paths(codec._PYTHON_REQUESTS, codec._FAST_REQUESTS)
by_path = pytest.mark.parametrize("path", PATHS)


def read_request(data: bytes, path: FastPath) -> Request | None:
    """The reader alone (``None``: it leaves the record to fastavro)."""
    request: Request | None = path.read(data, REGISTRY)
    return request


def test_the_reader_is_generated_from_the_current_schema() -> None:
    assert REGISTRY.current_fingerprint[REQUEST] == codec._FAST_REQUEST
    assert codec._FAST_REQUESTS.fingerprint == codec._FAST_REQUEST


@settings(max_examples=examples(2_000), deadline=None)
@given(request=REQUESTS)
@by_path
def test_reader_equals_fastavro_on_every_valid_record(request: Request, path: FastPath) -> None:
    data = encode_request(request)
    fast = read_request(data, path)
    assert fast is not None
    assert fast == request
    assert fast == _fastavro(data)
    same_types(fast, request)
    assert decode_request(data) == request


@st.composite
def _corrupted(draw: st.DrawFn) -> bytes:
    return corrupt(draw, encode_request(draw(REQUESTS)))


_HEADER = encode_request(Request("r", "o", "c", "k", None, Sweep()))[: codec.HEADER_LEN]


@settings(max_examples=examples(2_000), deadline=None)
@given(data=_corrupted() | st.binary(max_size=60).map(lambda tail: _HEADER + tail))
@by_path
def test_reader_on_corrupt_bytes_steps_aside_or_agrees(data: bytes, path: FastPath) -> None:
    fast = read_request(data, path)
    try:
        reference = _fastavro(data)
    except CodecError:
        assert fast is None
        return
    assert fast is None or fast == reference
    assert decode_request(data) == reference


@by_path
def test_reader_steps_aside_on_lenient_encodings_fastavro_accepts(path: FastPath) -> None:
    data = encode_request(Request("r", "o", "c", "k", "t", Fail("e", True)))
    false = encode_request(Request("r", "o", "c", "k", "t", Fail("e", False)))
    at = next(i for i, (a, b) in enumerate(zip(data, false, strict=True)) if a != b)
    # The boolean's byte; fastavro reads any non-zero byte as true.
    odd_boolean = data[:at] + b"\x02" + data[at + 1 :]
    assert read_request(odd_boolean, path) is None
    assert decode_request(odd_boolean) == _fastavro(odd_boolean)


def test_bytearray_input_takes_fastavro_and_yields_bytes() -> None:
    request = Request("r", "o", "c", "k", "t", Complete(b"result"))
    decoded = decode_request(bytearray(encode_request(request)))  # type: ignore[arg-type]
    assert decoded == request
    assert isinstance(decoded.body, Complete)
    assert type(decoded.body.result) is bytes


@by_path
def test_reader_steps_aside_on_a_reply_partition_beyond_32_bits(path: FastPath) -> None:
    data = encode_request(Request("r", "o", "c", "k", None, Sweep(), 7))
    assert data.endswith(b"\x02\x0e\x00\x00")  # branch "int", zig-zag 7; reconciled, approval null
    too_big = data[:-3] + b"\x80\x80\x80\x80\x10\x00\x00"  # 2**31: no Avro int
    assert read_request(too_big, path) is None
    try:
        reference = _fastavro(too_big)
    except CodecError:
        return
    assert decode_request(too_big) == reference


@by_path
def test_extreme_longs_and_long_texts_round_trip(path: FastPath) -> None:
    for lease in (0, -1, 63, 64, -65, 2**63 - 1, -(2**63)):
        body = Claim("t" * 300, b"p" * 70, "h", lease, -lease - 1, Effect.PURE, "é" * 40)
        request = Request("r" * 64, "o", "c", "k", "t" * 128, body)
        assert read_request(encode_request(request), path) == request


# --- the generated writer (oncelog.schemas.record_writer) --------------------------

WRITTEN = st.builds(
    Request,
    TEXT,
    TEXT,
    TEXT,
    TEXT,
    st.none() | TEXT,
    BODIES | st.just(Get()),
    REPLY,
    st.none() | TEXT,
    APPROVALS,
)


def _fastavro_bytes(request: Request) -> bytes:
    """The reference writer: fastavro with the current schema."""
    buf = io.BytesIO()
    buf.write(codec.MAGIC + REGISTRY.current_fingerprint[REQUEST])
    fastavro.schemaless_writer(buf, REGISTRY.current[REQUEST], convert.request_to_avro(request))
    return buf.getvalue()


@pytest.mark.usefixtures("writers")  # the Python writer, and the extension's where built
@settings(max_examples=examples(2_000), deadline=None)
@given(request=WRITTEN)
def test_writer_equals_fastavro_byte_for_byte(request: Request) -> None:
    data = encode_request(request)
    assert data == _fastavro_bytes(request)
    assert decode_request(data) == request


def test_another_current_request_schema_takes_fastavro() -> None:
    schema = json.loads((codec.SCHEMA_DIR / "request.avsc").read_text("utf-8"))
    schema["fields"].append({"name": "extra", "type": "long", "default": 5})
    registry = SchemaRegistry()
    registry.add_current(fastavro.parse_schema(schema))
    request = Request("r", "o", "c", "k", "t", Complete(b"{}"), 3)
    data = encode_request(request, registry)
    assert data[2:10] == registry.current_fingerprint[REQUEST] != codec._FAST_REQUEST
    # fastavro wrote the same fields, then the new one's default
    assert data[10:] == encode_request(request)[10:] + write_long(5)
