"""schemathesis against the API's own OpenAPI schema: no 5xx, every answer as described.

The read and the write API in one app, over a real broker and projector (the write
routes' valid cases are real claims and completions). Each operation of the schema gets
up to ``EXAMPLES`` generated cases (a few hundred in all: 14 operations), bounded in time
by the count and by the server's own call timeout. The cases are driven with Hypothesis
directly: schemathesis's pytest plugin does not load under this pytest.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.result import Ok

from tests.gateway.conftest import WRITE_TOKEN, WriteClient

pytestmark = pytest.mark.kafka

EXAMPLES = 25
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
HEADERS = {"Authorization": f"Bearer {WRITE_TOKEN}"}


def test_every_answer_matches_the_schema_and_none_is_a_5xx(open_reads_api: WriteClient) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", open_reads_api.http.app)
    operations = [result.ok() for result in schema.get_all_operations() if isinstance(result, Ok)]
    assert len(operations) >= 14  # the read routes and the write routes
    calls: list[int] = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def conforms(case: Any) -> None:
            response = case.call_and_validate(headers=HEADERS, checks=CHECKS)
            calls.append(response.status_code)

        conforms()
    assert len(calls) >= 5 * len(operations)  # cases were made and sent
    assert any(200 <= status < 300 for status in calls)  # some reached the ledger and back
    print(f"{len(calls)} cases, by status: {sorted(Counter(calls).items())}")
