"""A request's optional ``reconciled``: from an old writer, through the referee, into DuckDB."""

from __future__ import annotations

from pathlib import Path

import pytest

from oncelog.errors import InvalidRequestError
from oncelog.projector.store import Store
from oncelog.referee.judge import Refusal, admit
from oncelog.schemas.codec import decode_request, encode_request
from oncelog.schemas.convert import request_to_avro
from oncelog.schemas.models import Outcome, Request
from tests.projector.fold_factories import Op
from tests.projector.store_factories import feed
from tests.schemas.test_history import _old_bytes


def _admitted(request: Request) -> Request | Refusal:
    value = encode_request(request)
    key = request.operation_id.encode()
    return admit(value, key, partition=0, offset=7, ts_ms=1_000, partitions=1)


def test_a_request_of_the_v3_schema_decodes_as_not_reconciled() -> None:
    request = Op().complete("A")
    datum = request_to_avro(request)
    del datum["reconciled"]  # the v3 writer had no such field
    decoded = decode_request(_old_bytes("request.v3.avsc", datum))
    assert decoded == request
    assert decoded.reconciled is None


@pytest.mark.parametrize("value", ["found", "not_found"])
def test_a_completion_or_failure_may_say_how_it_reconciled(value: str) -> None:
    op = Op()
    for request in (op.complete("A"), op.fail("A", retryable=False)):
        sent = request._replace(reconciled=value)
        assert _admitted(sent) == sent  # decoded with the field, and admitted


@pytest.mark.parametrize(
    "request_",
    [
        Op().claim("A")._replace(reconciled="found"),
        Op().heartbeat("A")._replace(reconciled="not_found"),
        Op().complete("A")._replace(reconciled="maybe"),
    ],
    ids=["on a claim", "on a heartbeat", "an unknown value"],
)
def test_a_reconciled_the_sdk_never_writes_is_refused(request_: Request) -> None:
    refused = _admitted(request_)
    assert isinstance(refused, Refusal)
    assert isinstance(refused.error, InvalidRequestError)
    assert "reconciled" in str(refused.error)
    assert refused.answer is not None
    assert refused.answer.outcome is Outcome.INVALID_REQUEST


def test_the_requests_table_carries_it(tmp_path: Path) -> None:
    op = Op()
    with Store(tmp_path / "ledger.duckdb") as store:
        feed(
            store,
            0,
            [(op.claim("A"), 1_000), (op.complete("A")._replace(reconciled="found"), 2_000)],
        )
        rows = store.cursor().execute('SELECT kind, reconciled FROM requests ORDER BY "offset"')
        assert rows.fetchall() == [("claim", None), ("complete", "found")]
