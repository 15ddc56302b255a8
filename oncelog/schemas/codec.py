"""Avro single-object encoding of the wire records, with fastavro.

Wire format: ``C3 01`` + the 8-byte little-endian CRC-64-AVRO fingerprint of the
writer schema's parsing canonical form + the schemaless Avro body. Decoding finds
the writer schema by fingerprint (the current schemas plus older versions under
``history/``) and resolves it against the current reader schema, so old records
stay readable after a schema gains a field with a default.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar, cast

import fastavro
from fastavro.schema import fingerprint, load_schema, to_parsing_canonical_form

from oncelog.errors import CodecError
from oncelog.schemas import (
    avro_write,
    convert,
    decision_reader,
    decision_reader_previous,
    layout,
    previous,
    record_writers,
    request_reader,
    request_reader_previous,
    upgrade,
)
from oncelog.schemas.fast_paths import FastPath
from oncelog.schemas.models import (
    CheckpointKind,
    CheckpointRecord,
    Decision,
    ExecutionSnapshot,
    ExecutionState,
    Request,
)
from oncelog.schemas.native_reader import natively_read
from oncelog.schemas.native_writer import natively_written

MAGIC: Final = b"\xc3\x01"
HEADER_LEN: Final = 10
SCHEMA_DIR: Final = layout.SCHEMA_DIR
HISTORY_DIR: Final = SCHEMA_DIR / "history"

REQUEST: Final = layout.REQUEST
SNAPSHOT: Final = layout.SNAPSHOT
DECISION: Final = layout.DECISION
CHECKPOINT: Final = layout.CHECKPOINT


def form_fingerprint(canonical_form: str) -> bytes:
    """The 8 little-endian CRC-64-AVRO (Rabin) fingerprint bytes of a parsing canonical form."""
    # fastavro spells the fingerprint as the hex of those little-endian bytes.
    return bytes.fromhex(fingerprint(canonical_form, "CRC-64-AVRO"))


def schema_fingerprint(parsed_schema: Any) -> bytes:
    """The 8 little-endian fingerprint bytes that prefix records of this schema."""
    return form_fingerprint(to_parsing_canonical_form(parsed_schema))


class SchemaRegistry:
    """Known writer schemas by fingerprint, and the current schema of each record type."""

    def __init__(self) -> None:
        self.current: dict[str, Any] = {}
        self.current_fingerprint: dict[str, bytes] = {}
        self.writers: dict[bytes, tuple[str, Any]] = {}
        self.upgrades: dict[bytes, Callable[[dict[str, Any]], dict[str, Any]]] = {}

    def add_current(self, parsed_schema: Any) -> None:
        """Make ``parsed_schema`` the reader (and writer) schema of its record type."""
        name = parsed_schema["name"]
        fingerprint = self.register_writer(parsed_schema)
        self.current[name] = parsed_schema
        self.current_fingerprint[name] = fingerprint

    def register_writer(self, parsed_schema: Any) -> bytes:
        """Accept records written with ``parsed_schema`` (an older version, say)."""
        fingerprint = schema_fingerprint(parsed_schema)
        self.writers[fingerprint] = (parsed_schema["name"], parsed_schema)
        return fingerprint

    def register_writer_file(
        self, path: Path, convert_on_read: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    ) -> bytes:
        """Register a self-contained ``.avsc`` file as a known writer schema.

        With ``convert_on_read``, records of this writer are read with their own
        schema and ``convert_on_read`` turns the datum into the current layout (for changes
        that schema resolution cannot express, such as hashing a field).
        """
        # load_schema resolves named types from dev.oncelog.*.avsc files beside ``path``.
        fingerprint = self.register_writer(load_schema(str(path)))
        if convert_on_read is not None:
            self.upgrades[fingerprint] = convert_on_read
        return fingerprint


def default_registry() -> SchemaRegistry:
    """The current schemas from this package plus every file under ``history/``."""
    registry = SchemaRegistry()
    for parsed in layout.CURRENT.values():  # checked against the models at import
        registry.add_current(parsed)
    if HISTORY_DIR.is_dir():
        for path in sorted(HISTORY_DIR.glob("*.avsc")):
            # dev.oncelog.X.avsc files are named types the old schemas include, not records.
            if not path.name.startswith("dev.oncelog."):
                registry.register_writer_file(path, upgrade.BY_HISTORY_FILE.get(path.name))
    return registry


REGISTRY: Final = default_registry()

T = TypeVar("T")


def _encode(registry: SchemaRegistry, name: str, record: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    buf.write(MAGIC)
    buf.write(registry.current_fingerprint[name])
    fastavro.schemaless_writer(buf, registry.current[name], record)
    return buf.getvalue()


def _read_body(registry: SchemaRegistry, name: str, data: bytes) -> Any:
    if len(data) < HEADER_LEN:
        raise CodecError(
            "record shorter than the single-object header", length=len(data), fingerprint=None
        )
    fingerprint = bytes(data[2:HEADER_LEN])
    if data[:2] != MAGIC:
        raise CodecError("bad single-object magic", length=len(data), fingerprint=fingerprint)
    known = registry.writers.get(fingerprint)
    if known is None:
        raise CodecError("unknown writer schema", length=len(data), fingerprint=fingerprint)
    writer_name, writer = known
    if writer_name != name:
        raise CodecError(
            f"expected {name}, got {writer_name}", length=len(data), fingerprint=fingerprint
        )
    convert_after = registry.upgrades.get(fingerprint)
    reader = writer if convert_after is not None else registry.current[name]
    buf = io.BytesIO(data)
    buf.seek(HEADER_LEN)
    try:
        record = fastavro.schemaless_reader(
            buf,
            writer,
            None if writer is reader else reader,
            return_record_name=True,
            return_record_name_override=True,
        )
    except Exception as exc:  # fastavro raises many types on corrupt input
        raise CodecError(
            f"corrupt {name} body: {exc!r}", length=len(data), fingerprint=fingerprint
        ) from exc
    if buf.tell() != len(data):
        raise CodecError(f"trailing bytes after {name}", length=len(data), fingerprint=fingerprint)
    return record if convert_after is None else convert_after(cast(dict[str, Any], record))


def _decode(registry: SchemaRegistry, name: str, data: bytes, build: Callable[[Any], T]) -> T:
    record = _read_body(registry, name, data)
    try:
        return build(record)
    except Exception as exc:  # e.g. invalid UTF-8 slipped into a field we re-check
        fingerprint = bytes(data[2:HEADER_LEN])
        raise CodecError(
            f"invalid {name}: {exc!r}", length=len(data), fingerprint=fingerprint
        ) from exc


# The readers generated from the package's current schemas (oncelog.schemas.inline_reader),
# used for records of those schemas while the registry's reader schema is the same one.
_FAST_REQUEST: Final = schema_fingerprint(layout.CURRENT[REQUEST])
_FAST_HEADER: Final = MAGIC + _FAST_REQUEST
# The previous release's layout (oncelog.schemas.previous): a record that uses nothing
# added since is written in it, so that release still decodes it during an upgrade.
_PREV_REQUEST_HEADER: Final = MAGIC + schema_fingerprint(previous.REQUEST_SCHEMA)
# The single-object writers: the extension's where it is built, else the ones generated
# from the package's schemas (oncelog.schemas.record_writer) after the header.
_WRITE_REQUEST: Final = natively_written(
    _FAST_HEADER, record_writers.request, layout.CURRENT[REQUEST]
)
_WRITE_PREV_REQUEST: Final = natively_written(
    _PREV_REQUEST_HEADER, record_writers.previous_request, previous.REQUEST_SCHEMA
)


def _fast_path(name: str, previous_schema: Any, read: Any, read_previous: Any) -> FastPath:
    """The generated readers of record type ``name`` and when they may judge a record."""
    fingerprint = schema_fingerprint(layout.CURRENT[name])
    return FastPath(
        name,
        fingerprint,
        MAGIC + fingerprint,
        read,
        MAGIC + schema_fingerprint(previous_schema),
        read_previous,
        REGISTRY,
        HEADER_LEN,
    )


_PYTHON_REQUESTS: Final = _fast_path(
    REQUEST, previous.REQUEST_SCHEMA, request_reader.read, request_reader_previous.read
)
_FAST_REQUESTS: Final = natively_read(_PYTHON_REQUESTS, previous.REQUEST_SCHEMA)


def encode_request(request: Request, registry: SchemaRegistry = REGISTRY) -> bytes:
    """Single-object encode a request (with the writer generated from the package's
    schema while it is the registry's current one, else fastavro). A request with no
    approval in it is written in the previous release's layout."""
    if registry.current_fingerprint.get(REQUEST) == _FAST_REQUEST:
        if previous.request_fits(request):
            return _WRITE_PREV_REQUEST(request)
        return _WRITE_REQUEST(request)
    return _encode(registry, REQUEST, convert.request_to_avro(request))


def decode_request(data: bytes, registry: SchemaRegistry = REGISTRY) -> Request:
    """Decode a request; any failure is a :class:`CodecError`.

    Records of the current schema take the generated reader when it is also
    the registry's reader schema (no resolution needed); anything else, and any
    record that reader is unsure of, takes fastavro.
    """
    request: Request | None = _FAST_REQUESTS.read(data, registry)
    if request is not None:
        return request
    return _decode(registry, REQUEST, data, convert.request_from_avro)


def request_record(data: bytes, registry: SchemaRegistry = REGISTRY) -> dict[str, Any]:
    """A request as the Avro record of the current ``request.avsc`` (a union of records as
    ``(full name, record)``): what the archive's columns hold. Failures: :class:`CodecError`."""
    record: dict[str, Any] = _read_body(registry, REQUEST, data)
    return record


# The writers generated from the package's schemas, and their headers. The state inside
# a decision or a snapshot is written once and spliced (avro_write.StateBodies).
_FAST_SNAPSHOT: Final = schema_fingerprint(layout.CURRENT[SNAPSHOT])
_FAST_DECISION: Final = schema_fingerprint(layout.CURRENT[DECISION])
_SNAPSHOT_HEADER: Final = MAGIC + _FAST_SNAPSHOT
_DECISION_HEADER: Final = MAGIC + _FAST_DECISION
_STATE_BODIES: Final = record_writers.STATE_BODIES
_PREV_SNAPSHOT_HEADER: Final = MAGIC + schema_fingerprint(previous.SNAPSHOT_SCHEMA)
_PREV_DECISION_HEADER: Final = MAGIC + schema_fingerprint(previous.DECISION_SCHEMA)
_WRITE_SNAPSHOT: Final = natively_written(
    _SNAPSHOT_HEADER, record_writers.snapshot, layout.CURRENT[SNAPSHOT]
)
_WRITE_DECISION: Final = natively_written(
    _DECISION_HEADER, record_writers.decision, layout.CURRENT[DECISION]
)
_WRITE_PREV_SNAPSHOT: Final = natively_written(
    _PREV_SNAPSHOT_HEADER, record_writers.previous_snapshot, previous.SNAPSHOT_SCHEMA
)
_WRITE_PREV_DECISION: Final = natively_written(
    _PREV_DECISION_HEADER, record_writers.previous_decision, previous.DECISION_SCHEMA
)
# The state's body alone: the extension writes it anew each time (cheaper than the memo).
_WRITE_STATE_BODY: Final = natively_written(b"", _STATE_BODIES.body, layout.STATE_SCHEMA)
_WRITE_STATE_BODY_ONCE: Final = natively_written(b"", record_writers.state, layout.STATE_SCHEMA)


_PYTHON_DECISIONS: Final = _fast_path(
    DECISION, previous.DECISION_SCHEMA, decision_reader.read, decision_reader_previous.read
)
_FAST_DECISIONS: Final = natively_read(_PYTHON_DECISIONS, previous.DECISION_SCHEMA)


def encode_state_body(state: ExecutionState) -> bytes:
    """The schemaless Avro body of ``state`` in the current ``ExecutionState`` layout.

    The extension writes it anew each time; the Python writers memoize it by identity for
    recent states, so that the decision, the snapshot and the DuckDB blob of one state
    version share one encoding.
    """
    return _WRITE_STATE_BODY(state)


def encode_state_body_once(state: ExecutionState) -> bytes:
    """:func:`encode_state_body` for a state written once only (the bulk rebuild): the
    Python writers' memo would hold its body for nothing."""
    return _WRITE_STATE_BODY_ONCE(state)


def clear_state_bodies() -> None:
    """Forget the memoized state bodies and retry-memory runs (for benchmarks and tests)."""
    _STATE_BODIES.clear()
    avro_write.clear_runs()


def encode_snapshot(snapshot: ExecutionSnapshot, registry: SchemaRegistry = REGISTRY) -> bytes:
    """Single-object encode an execution snapshot.

    The generated writer is used while its schema is the registry's current one
    (the same bytes as fastavro's, which writes otherwise).
    """
    if registry.current_fingerprint.get(SNAPSHOT) == _FAST_SNAPSHOT:
        if previous.snapshot_fits(snapshot):
            return _WRITE_PREV_SNAPSHOT(snapshot)
        return _WRITE_SNAPSHOT(snapshot)
    return _encode(registry, SNAPSHOT, convert.snapshot_to_avro(snapshot))


def decode_snapshot(data: bytes, registry: SchemaRegistry = REGISTRY) -> ExecutionSnapshot:
    """Decode an execution snapshot; any failure is a :class:`CodecError`."""
    return _decode(registry, SNAPSHOT, data, convert.snapshot_from_avro)


def encode_decision(decision: Decision, registry: SchemaRegistry = REGISTRY) -> bytes:
    """Single-object encode a decision (generated writer as for snapshots)."""
    if registry.current_fingerprint.get(DECISION) == _FAST_DECISION:
        if previous.decision_fits(decision):
            return _WRITE_PREV_DECISION(decision)
        return _WRITE_DECISION(decision)
    return _encode(registry, DECISION, convert.decision_to_avro(decision))


def decode_decision(data: bytes, registry: SchemaRegistry = REGISTRY) -> Decision:
    """Decode a decision; any failure is a :class:`CodecError`.

    The generated reader takes records of the current schema (as for requests);
    anything else, and anything it is unsure of, takes fastavro.
    """
    decision: Decision | None = _FAST_DECISIONS.read(data, registry)
    if decision is not None:
        return decision
    return _decode(registry, DECISION, data, convert.decision_from_avro)


# The checkpoint schema of the previous release. A record that leaves every field added
# since at its null default is written in that layout, so the previous release's readers
# (which know writers by fingerprint) still decode it during a rolling upgrade; docs/spec.md
# "Upgrades".
_CHECKPOINT_PREVIOUS: Final[Any] = load_schema(str(HISTORY_DIR / "checkpoint.v1.avsc"))
_CHECKPOINT_PREVIOUS_HEADER: Final = MAGIC + schema_fingerprint(_CHECKPOINT_PREVIOUS)
_CHECKPOINT_ADDED: Final = frozenset(
    f["name"] for f in layout.CURRENT[CHECKPOINT]["fields"]
) - frozenset(f["name"] for f in _CHECKPOINT_PREVIOUS["fields"])


def encode_checkpoint(record: CheckpointRecord, registry: SchemaRegistry = REGISTRY) -> bytes:
    """One record of the checkpoints topic, single-object encoded (fastavro).

    Written with the previous release's schema when it can say the same (no field added
    since is set), else with the current one.
    """
    fields = {f: getattr(record, f) for f in record.__dataclass_fields__}
    fields["kind"] = record.kind.value
    if registry is REGISTRY and all(fields[f] is None for f in _CHECKPOINT_ADDED):
        buf = io.BytesIO()
        buf.write(_CHECKPOINT_PREVIOUS_HEADER)
        fastavro.schemaless_writer(buf, _CHECKPOINT_PREVIOUS, fields)
        return buf.getvalue()
    return _encode(registry, CHECKPOINT, fields)


def _checkpoint_from_avro(record: dict[str, Any]) -> CheckpointRecord:
    return CheckpointRecord(**{**record, "kind": CheckpointKind(record["kind"])})


def decode_checkpoint(data: bytes, registry: SchemaRegistry = REGISTRY) -> CheckpointRecord:
    """A record of the checkpoints topic; :class:`CodecError` when it is not one."""
    return _decode(registry, CHECKPOINT, data, _checkpoint_from_avro)
