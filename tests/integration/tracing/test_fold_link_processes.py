"""The fold span links to the client's span across processes: ``oncelog serve`` in a
process of its own (traced_serve.py writes its spans to a file), the client here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector import process
from oncelog.settings import Settings
from tests.integration.conftest import PATIENT
from tests.integration.tracing.conftest import one

TEST_TRACER = trace.get_tracer("tests")


def _ids(context: dict[str, Any]) -> tuple[int, int]:
    return int(context["trace_id"], 16), int(context["span_id"], 16)


def test_the_fold_in_serve_links_to_the_client_in_this_process(
    topics: Settings, spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    served = tmp_path / "serve-spans.jsonl"
    args = ["-m", "tests.integration.tracing.traced_serve", str(served), "serve", "--no-http"]
    serve = process.spawn(args, tmp_path / "serve.log", process.serve_env(topics))
    try:
        with (
            SyncLedgerClient(topics, timeouts=PATIENT) as client,
            TEST_TRACER.start_as_current_span("agent step"),
        ):
            claim = client.claim_execution("run-5", "k", tool_name="t", params={})
    finally:
        assert process.stop(serve) == 0, (tmp_path / "serve.log").read_text()[-2000:]
    called = one(spans.get_finished_spans(), "oncelog.claim")
    mine = (called.context.trace_id, called.context.span_id)
    folds = [
        (s, k)
        for s in map(json.loads, served.read_text().splitlines())
        if s["name"] == "oncelog.fold_batch"
        for k in s["links"]
        if _ids(k["context"]) == mine
    ]
    assert folds, served.read_text()[-2000:]
    assert all(_ids(f["context"])[0] != mine[0] for f, _ in folds)  # linked, not parented
    # The decision carried the fold's context back: the claim span links to one of them.
    [back] = called.links
    assert (back.context.trace_id, back.context.span_id) in {_ids(f["context"]) for f, _ in folds}
    assert folds[0][1]["attributes"]["oncelog.operation_id"] == claim.execution.id
    assert claim.claim_token not in served.read_text()
