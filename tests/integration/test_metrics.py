"""``GET /metrics`` of a real projector under load: lag, offsets and counters move.

The requests are on the log before the projector starts; a fault hook holds the
projector after its first batch, so that the scrape sees a lag that is known, not
raced; then it folds the rest and the lag reaches 0.
"""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest
from confluent_kafka import Producer
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from pydantic import SecretStr

from oncelog.identity.partitioner import partition_for
from oncelog.net import free_port
from oncelog.producer.calls import RequestBuilder
from oncelog.projector import process
from oncelog.projector.store import Store
from oncelog.query.catch_up import wait_until_folded
from oncelog.query.server import start_http
from oncelog.query.source import HttpSource
from oncelog.schemas.codec import encode_request
from oncelog.settings import Settings
from tests.integration.conftest import start_projector
from tests.integration.helpers import kafka

pytestmark = pytest.mark.kafka

CHANNEL = "run-metrics"
CLAIMS = 40
TOKEN = SecretStr("metrics-test-token")

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _produce_claims(topics: Settings, channel: str, count: int, *, garbage: bool) -> int:
    """``count`` claims of ``channel`` (and a poison record), written straight to the log.

    Nothing waits for a decision: no projector may run yet. Returns the partition.
    """
    builder = RequestBuilder("worker-metrics")
    p = partition_for(channel, topics.partitions)
    producer = Producer(kafka(topics))
    for step in range(count):
        request = builder.claim_execution(channel, step=step, tool_name="t", params={}).request
        value = encode_request(request)
        producer.produce(topics.requests_topic, value, request.operation_id.encode(), partition=p)
    if garbage:
        producer.produce(topics.requests_topic, b"\x00garbage", b"op", partition=p)
    assert producer.flush(10) == 0
    return p


def _scrape(url: str, token: SecretStr | None = TOKEN) -> Samples:
    headers = {} if token is None else {"Authorization": f"Bearer {token.get_secret_value()}"}
    answer = httpx.get(f"{url}/metrics", headers=headers, timeout=10)
    answer.raise_for_status()
    assert answer.headers["content-type"].startswith("text/plain")
    samples: Samples = {}
    for family in text_string_to_metric_families(answer.text):
        assert family.name.startswith("oncelog_"), family.name
        for s in family.samples:
            samples[(s.name, frozenset(s.labels.items()))] = s.value
    return samples


def _get(samples: Samples, name: str, **labels: str) -> float:
    """The sample's value; a missing sample fails (it is not read as 0)."""
    key = (name, frozenset(labels.items()))
    assert key in samples, f"no sample {name}{labels} in /metrics"
    return samples[key]


def test_lag_offsets_and_decision_counters_move_under_load(
    topics: Settings, tmp_path: Path
) -> None:
    p = _produce_claims(topics, CHANNEL, CLAIMS, garbage=True)
    total = CLAIMS + 1  # the offsets of the partition: the claims, then the poison record
    store = Store(tmp_path / "metrics.duckdb")
    registry = CollectorRegistry()
    api = start_http(store, "127.0.0.1", 0, token=TOKEN, metrics=registry)
    url = f"http://127.0.0.1:{api.port}"
    paused, resume = threading.Event(), threading.Event()

    def hold_after_first_batch() -> None:
        if not paused.is_set():
            paused.set()
            assert resume.wait(60)

    running = start_projector(
        topics, store, batch_size=5, metrics=registry, before_commit=hold_after_first_batch
    )
    try:
        assert httpx.get(f"{url}/metrics", timeout=10).status_code == 401  # the API's token
        assert paused.wait(60), "the projector folded no batch"
        position = {"topic": topics.requests_topic, "partition": str(p)}
        held = _scrape(url)
        folded = _get(held, "oncelog_last_folded_offset", **position) + 1
        claimed = _get(held, "oncelog_decisions_total", kind="claim", outcome="claimed")
        assert 1 <= folded <= 5  # one batch of at most five
        assert claimed == folded
        assert _get(held, "oncelog_consumer_lag", **position) == total - folded > 0
        resume.set()
        assert running.projector.wait_committed(p, total - 1, 60)
        done = _scrape(url)
    finally:
        resume.set()
        running.halt()
        api.stop()
        store.close()
    assert _get(done, "oncelog_consumer_lag", **position) == 0
    assert _get(done, "oncelog_last_folded_offset", **position) == total - 1
    assert _get(done, "oncelog_decisions_total", kind="claim", outcome="claimed") == CLAIMS
    assert _get(done, "oncelog_dead_letters_total", code="codec_error") == 1
    assert _get(done, "oncelog_fold_batch_seconds_count") >= total / 5
    assert _get(done, "oncelog_commit_seconds_count") >= 1
    assert _get(done, "oncelog_cached_states") == CLAIMS
    for kind in ("stale_completion", "unknown_outcome"):
        assert _get(done, "oncelog_suspected_duplicate_effects_total", kind=kind) == 0
    assert _get(done, "oncelog_forged_or_unknown_token_completions_total") == 0


def test_oncelog_serve_answers_metrics(topics: Settings, tmp_path: Path) -> None:
    """The CLI's serve wires its projector to /metrics (a child process, as deployed)."""
    settings = topics.model_copy(
        update={"db_path": tmp_path / "serve.duckdb", "http_port": free_port()}
    )
    url = f"http://127.0.0.1:{settings.http_port}"
    log = tmp_path / "serve.log"
    serve = process.start_serve(settings, log)
    try:
        process.wait_http(serve, f"{url}/healthz", log)
        p = _produce_claims(settings, "run-serve-metrics", 7, garbage=False)
        wait_until_folded(HttpSource(url), {p: 7}, timeout_s=60)
        samples = _scrape(url, token=None)
    finally:
        process.stop(serve)
    assert _get(samples, "oncelog_decisions_total", kind="claim", outcome="claimed") == 7
    position = {"topic": settings.requests_topic, "partition": str(p)}
    assert _get(samples, "oncelog_last_folded_offset", **position) == 6
