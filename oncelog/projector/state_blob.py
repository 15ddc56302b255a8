"""Avro single-object encoding of one :class:`ExecutionState`, for the DuckDB projection.

The store keeps each state version as a blob so that ``load_states`` returns the
exact state the fold produced (the queryable columns are a lossy projection).
The blob uses the same framing as the wire records (``C3 01`` + CRC-64-AVRO
fingerprint + schemaless body) and the shared ``ExecutionState`` schema, so a
blob written today stays readable after the schema gains a defaulted field.
Blobs of the pre-fingerprint layout (``history/``) are converted on read by
:mod:`oncelog.schemas.upgrade`, so a DuckDB file of that version still resumes.
"""

from __future__ import annotations

import io
from typing import Any, Final

import fastavro
from fastavro.schema import load_schema

from oncelog.errors import CodecError
from oncelog.schemas import previous, upgrade
from oncelog.schemas.codec import (
    HEADER_LEN,
    HISTORY_DIR,
    MAGIC,
    encode_state_body,
    encode_state_body_once,
    schema_fingerprint,
)
from oncelog.schemas.convert import state_from_avro
from oncelog.schemas.layout import STATE_SCHEMA
from oncelog.schemas.models import ExecutionState

# Parsed once: re-parsing per call is a known fastavro slowdown. The writer is generated from it.
_SCHEMA: Final[Any] = STATE_SCHEMA
_FINGERPRINT: Final = schema_fingerprint(_SCHEMA)
_HEADER: Final = MAGIC + _FINGERPRINT
# The layout before token fingerprints: read with its own schema, then converted.
_OLD_SCHEMA: Final[Any] = load_schema(str(HISTORY_DIR / "dev.oncelog.ExecutionState.avsc"))
_OLD_HEADER: Final = MAGIC + schema_fingerprint(_OLD_SCHEMA)
# The layout before the audit of unknown outcomes (issue 26): Avro resolution fills in
# the fields it lacks (``released``, ``outcome_unknown``, a grant's ``worker_id``).
_V2_SCHEMA: Final[Any] = load_schema(str(HISTORY_DIR / "state.v2.avsc"))
# The layout before forks (issue 29): resolution fills ``inherited`` (null) and reads
# the Outcome enum that lacks ``inherited``.
_V3_SCHEMA: Final[Any] = load_schema(str(HISTORY_DIR / "state.v3.avsc"))
# The layout before approvals (issue 45), which a state without one is still written in
# (oncelog.schemas.previous): resolution fills ``approval`` (null).
_V4_HEADER: Final = MAGIC + schema_fingerprint(previous.STATE_SCHEMA)
_RESOLVED: Final[dict[bytes, Any]] = {
    MAGIC + schema_fingerprint(_V2_SCHEMA): _V2_SCHEMA,
    MAGIC + schema_fingerprint(_V3_SCHEMA): _V3_SCHEMA,
    _V4_HEADER: previous.STATE_SCHEMA,
}


def encode_state(state: ExecutionState, *, once: bool = False) -> bytes:
    """Single-object encode ``state``. Without the extension its body is shared with its
    published records (memoized by identity); ``once``: a state encoded here only (the bulk
    rebuild), whose body the memo would hold for nothing (keeping it costs a good part of
    the encoding)."""
    body = encode_state_body_once(state) if once else encode_state_body(state)
    if previous.state_fits(state):  # a previous release can still open the file
        return _V4_HEADER + previous.state_body(body)
    return _HEADER + body


def decode_state(data: bytes) -> ExecutionState:
    """Decode a blob written by :func:`encode_state`; any failure is a :class:`CodecError`."""
    header = bytes(data[:HEADER_LEN])
    if len(data) < HEADER_LEN or (header not in (_HEADER, _OLD_HEADER, *_RESOLVED)):
        fingerprint = bytes(data[2:HEADER_LEN]) if len(data) >= HEADER_LEN else None
        raise CodecError("not an ExecutionState blob", length=len(data), fingerprint=fingerprint)
    buf = io.BytesIO(data)
    buf.seek(HEADER_LEN)
    try:
        if header == _OLD_HEADER:
            old: Any = fastavro.schemaless_reader(buf, _OLD_SCHEMA, None)
            return state_from_avro(upgrade.state(old))
        writer = _RESOLVED.get(header)
        if writer is not None:
            record: Any = fastavro.schemaless_reader(buf, writer, _SCHEMA)
            return state_from_avro(record)
        record = fastavro.schemaless_reader(buf, _SCHEMA, None)
        return state_from_avro(record)
    except Exception as exc:  # fastavro raises many types on corrupt input
        raise CodecError(
            f"corrupt ExecutionState blob: {exc!r}", length=len(data), fingerprint=_FINGERPRINT
        ) from exc
