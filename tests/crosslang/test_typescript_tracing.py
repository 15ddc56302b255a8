"""The TypeScript SDK's trace context reaches ``serve``'s fold span, on the real broker.

A Node caller claims inside an agent's span (ids chosen here), and once outside any span.
With a ``serve`` that does not trace, the request record carries the caller's
``traceparent`` as it was sent, and the other none. With a traced ``serve`` (the
OpenTelemetry SDK set, spans to a file), FastAPI's own spans of the HTTP request are
children of the caller's, the record carries the current one, and the
``oncelog.fold_batch`` span links to it: the link leads into the caller's trace, up to the
caller's span. Then the SDK without ``@opentelemetry/api`` at all claims the same. Without
``node`` the tests skip, unless ``ONCELOG_REQUIRE_NODE`` is set.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oncelog.tracing.propagation import TRACEPARENT
from tests.integration.helpers import request_headers
from tests.served import SDK, Served, build, require_node, run, serving

HERE = Path(__file__).parent

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def traced(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A traced ``serve``; its spans are in ``spans.jsonl`` beside its log."""
    require_node()
    folder = tmp_path_factory.mktemp("ts-traced")
    with serving(bootstrap, folder, spans=folder / "spans.jsonl") as served:
        yield served


def _claims(served: Served, trace_id: str, span_id: str, channel: str) -> dict[str, Any]:
    """Run ts_traced_claims.mjs from inside the package; its claim in the span (completed
    there) and its claim outside any span: status, operation id and claim token of each."""
    node, _ = require_node()
    build(SDK)
    script = SDK / "dist" / f"traced-{os.getpid()}-{channel}.mjs"
    shutil.copy(HERE / "ts_traced_claims.mjs", script)
    try:
        out = run([node, str(script), trace_id, span_id, channel], SDK, served.node_env())
    finally:
        script.unlink()
    claims = json.loads(out.strip().splitlines()[-1])
    assert claims["traced"]["status"] == claims["plain"]["status"] == "claimed", out
    found: dict[str, Any] = claims
    return found


def _ids(context: dict[str, str]) -> tuple[int, int]:
    return int(context["trace_id"], 16), int(context["span_id"], 16)


def test_the_record_carries_the_typescript_callers_traceparent(served: Served) -> None:
    trace_id, span_id, channel = secrets.token_hex(16), secrets.token_hex(8), f"ts-{uuid.uuid4()}"
    claims = _claims(served, trace_id, span_id, channel)
    carried = {TRACEPARENT: f"00-{trace_id}-{span_id}-01".encode()}
    assert request_headers(served.settings, channel) == {
        claims["traced"]["operationId"]: [carried, carried],  # the claim, the completion
        claims["plain"]["operationId"]: [{}],
    }


def _ancestry(spans: dict[int, dict[str, Any]], span_id: int) -> list[int]:
    """``span_id`` and its parents' ids, as far as ``spans`` (by span id) has them; then
    the id of the first parent that is not there (another process's)."""
    chain = [span_id]
    while chain[-1] in spans and spans[chain[-1]]["parent_id"] is not None:
        chain.append(int(spans[chain[-1]]["parent_id"], 16))
    return chain


def test_the_fold_span_links_into_the_typescript_callers_trace(traced: Served) -> None:
    trace_id, span_id, channel = secrets.token_hex(16), secrets.token_hex(8), f"ts-{uuid.uuid4()}"
    claims = _claims(traced, trace_id, span_id, channel)
    traced_op = claims["traced"]["operationId"]
    caller = (int(trace_id, 16), int(span_id, 16))
    # Written before the decision was published (oncelog.tracing.batch_spans): there by now.
    text = traced.log.with_name("spans.jsonl").read_text()
    written = [json.loads(line) for line in text.splitlines()]
    by_id = {_ids(s["context"])[1]: s for s in written}
    [(fold, link)] = [
        (s, k)
        for s in written
        if s["name"] == "oncelog.fold_batch"
        for k in s["links"]
        if k["attributes"]["oncelog.operation_id"] == traced_op
        and k["attributes"]["oncelog.kind"] == "claim"
    ]
    linked = _ids(link["context"])
    assert linked[0] == caller[0]  # the caller's trace; the fold's own is another
    assert _ids(fold["context"])[0] != caller[0]
    # The linked span is serve's, under its HTTP request's span, under the caller's.
    assert _ancestry(by_id, linked[1])[-1] == caller[1]
    [claimed, _] = request_headers(traced.settings, channel)[traced_op]
    assert claimed[TRACEPARENT] == f"00-{trace_id}-{linked[1]:016x}-01".encode()
    # No span of serve carries a claim token, FastAPI's included (the tokens went through).
    for claim in claims.values():
        assert claim["claimToken"] not in text


def test_the_sdk_without_opentelemetry_claims_the_same(served: Served, tmp_path: Path) -> None:
    node, _ = require_node()
    build(SDK)
    # The built package alone, where no node_modules resolves @opentelemetry/api.
    shutil.copytree(SDK / "dist" / "src", tmp_path / "sdk")
    (tmp_path / "package.json").write_text('{"type": "module"}')
    shutil.copy(HERE / "ts_plain_claim.mjs", tmp_path / "plain.mjs")
    channel = f"ts-{uuid.uuid4()}"
    out = run([node, "plain.mjs", channel], tmp_path, served.node_env())
    claim = json.loads(out.strip().splitlines()[-1])
    assert (claim["otel"], claim["status"]) == (False, "claimed"), out
    assert request_headers(served.settings, channel) == {claim["operationId"]: [{}]}
