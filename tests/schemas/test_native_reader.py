"""The extension's Avro readers and writers run the programs built from the ``.avsc`` files,
and read and write what the generated Python readers and writers do.

The codec's reader tests (``test_request_reader.py``, ``test_decision_reader.py``) check
both readers of the current layout against fastavro; here, the previous release's layout
(most records on the log are written in it) and the program itself.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oncelog.errors import CodecError
from oncelog.native_core import NATIVE
from oncelog.schemas import codec, convert, previous, record_writers
from oncelog.schemas.codec import (
    REGISTRY,
    REQUEST,
    encode_decision,
    encode_request,
    encode_snapshot,
)
from oncelog.schemas.inline_reader import UnsupportedError
from oncelog.schemas.layout import CURRENT
from oncelog.schemas.models import (
    Decision,
    ExecutionSnapshot,
    ExecutionState,
    Kind,
    Outcome,
    Request,
    Status,
)
from oncelog.schemas.native_reader import program
from tests.budget import examples
from tests.schemas.conftest import same_types
from tests.schemas.corruption import corrupt
from tests.schemas.test_decision_reader import DECISIONS
from tests.schemas.test_request_reader import REQUESTS

pytestmark = pytest.mark.skipif(NATIVE is None, reason="the extension is not built here")

OLD_REQUESTS = REQUESTS.filter(previous.request_fits)
_NEW_STATUSES = frozenset({Status.AWAITING_APPROVAL, Status.APPROVED, Status.DENIED})
_NEW_KINDS = frozenset({Kind.APPROVE, Kind.DENY})


def _old_status(status: Status) -> Status:
    return Status.CLAIMED if status in _NEW_STATUSES else status


def _old_outcome(outcome: Outcome) -> Outcome:
    return Outcome.CLAIMED if outcome in previous._NEW_OUTCOMES else outcome


def _old_state(state: ExecutionState | None) -> ExecutionState | None:
    """``state`` with nothing the previous layout lacks: no approval, no status it added."""
    if state is None:
        return None
    attempt = state.previous
    if attempt is not None:
        attempt = attempt._replace(status=_old_status(attempt.status))
    recent = tuple(r._replace(outcome=_old_outcome(r.outcome)) for r in state.recent)
    return state._replace(
        status=_old_status(state.status), previous=attempt, recent=recent, approval=None
    )


def _old_decision(decision: Decision) -> Decision:
    attempt = decision.previous
    if attempt is not None:
        attempt = attempt._replace(status=_old_status(attempt.status))
    return decision._replace(
        kind=Kind.GET if decision.kind in _NEW_KINDS else decision.kind,
        outcome=_old_outcome(decision.outcome),
        state=_old_state(decision.state),
        previous=attempt,
    )


OLD_DECISIONS = DECISIONS.map(_old_decision)


def _both(path_python: Any, path_native: Any, data: bytes) -> tuple[Any, Any]:
    return path_python.read(data, REGISTRY), path_native.read(data, REGISTRY)


@settings(max_examples=examples(1_000), deadline=None)
@given(request=OLD_REQUESTS)
def test_a_request_of_the_previous_layout_reads_as_the_python_reader_reads_it(
    request: Request,
) -> None:
    data = encode_request(request)
    assert data.startswith(codec._FAST_REQUESTS.previous_header)
    assert data == codec._PREV_REQUEST_HEADER + record_writers.previous_request(request)
    python, native = _both(codec._PYTHON_REQUESTS, codec._FAST_REQUESTS, data)
    assert native == python == request
    same_types(native, python)


@settings(max_examples=examples(1_000), deadline=None)
@given(decision=OLD_DECISIONS)
def test_a_decision_of_the_previous_layout_reads_as_the_python_reader_reads_it(
    decision: Decision,
) -> None:
    data = encode_decision(decision)
    assert data.startswith(codec._FAST_DECISIONS.previous_header)
    assert data == codec._PREV_DECISION_HEADER + record_writers.previous_decision(decision)
    if decision.state is not None:
        snapshot = ExecutionSnapshot(decision.state, 1, 2, "rid", decision.outcome, 3)
        written = codec._PREV_SNAPSHOT_HEADER + record_writers.previous_snapshot(snapshot)
        assert encode_snapshot(snapshot) == written
        assert codec.decode_snapshot(written) == snapshot
    python, native = _both(codec._PYTHON_DECISIONS, codec._FAST_DECISIONS, data)
    assert native == python == decision
    same_types(native, python)


@st.composite
def _corrupted_old(draw: st.DrawFn) -> bytes:
    return corrupt(draw, encode_request(draw(OLD_REQUESTS)))


@settings(max_examples=examples(2_000), deadline=None)
@given(data=_corrupted_old())
def test_a_corrupted_request_of_the_previous_layout_steps_aside_or_agrees(data: bytes) -> None:
    native = codec._FAST_REQUESTS.read(data, REGISTRY)
    try:
        reference = codec._decode(REGISTRY, REQUEST, data, convert.request_from_avro)
    except CodecError:
        assert native is None
        return
    assert native is None or native == reference


def test_a_record_read_twice_is_two_models() -> None:
    # The reader builds new objects each time: nothing it returns is kept or reused.
    data = encode_decision(Decision("rid", "op", Kind.GET, Outcome.STATE_ABSENT, False, 5))
    first = codec._FAST_DECISIONS.read(data, REGISTRY)
    second = codec._FAST_DECISIONS.read(data, REGISTRY)
    assert first == second
    assert first is not second


def test_the_program_names_the_models_and_their_fields_by_the_schema() -> None:
    node = program(CURRENT[REQUEST])
    assert node[:3] == ("record", "tuple", Request)
    fields, sources = node[3], node[4]
    assert [name for name, *_ in sources] == list(Request._fields)
    assert fields[0] == ("string",)
    body = fields[sources[Request._fields.index("body")][1]]
    assert body[0] == "union"
    claim = body[1][0]
    assert claim[:2] == ("record", "slots")
    assert claim[3][5][0] == "enum"  # Claim.effect


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "record", "name": "dev.oncelog.Request", "fields": [
            {"name": "request_id", "type": {"type": "map", "values": "string"}}]},
        {"type": "record", "name": "dev.oncelog.Request", "fields": [
            {"name": "request_id", "type": {"type": "long", "logicalType": "timestamp-millis"}}]},
        {"type": "record", "name": "dev.oncelog.Request", "fields": [
            {"name": "request_id", "type": {"type": "array", "items": "null"}}]},
        {"type": "record", "name": "dev.oncelog.Request", "fields": [
            {"name": "request_id", "type": "string"}]},  # the model's other fields: no default
    ],
    ids=["map", "logical-type", "items-of-no-bytes", "a-field-without-default"],
)  # fmt: skip
def test_a_schema_the_reader_cannot_read_is_refused_when_the_program_is_built(
    schema: dict[str, Any],
) -> None:
    with pytest.raises(UnsupportedError):
        program(schema)


@pytest.mark.parametrize(
    "bad",
    [("nothing",), ("record", "tuple", dict, (), ()), ("record", "slots", Request, (), ()),
     ("record", "tuple", Request, (), (("request_id", 3),)), "long"],
    ids=["unknown-node", "tuple-of-a-dict", "slots-of-a-tuple", "field-out-of-range", "no-tuple"],
)  # fmt: skip
def test_a_malformed_program_is_refused_when_the_reader_is_made(bad: Any) -> None:
    assert NATIVE is not None
    with pytest.raises((ValueError, TypeError)):
        NATIVE.AvroReader(bad)
