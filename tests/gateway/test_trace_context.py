"""An HTTP caller's W3C trace context rides on its request record (docs/tracing.md).

The check of the ``traceparent`` header is pure and agrees with OpenTelemetry's own W3C
propagator on any input; on the real broker, the write API copies a valid one (and its
``tracestate``) onto the record, and ignores a malformed one.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from oncelog.identity.ids import operation_id
from oncelog.tracing.propagation import TRACEPARENT, TRACESTATE, caller_headers
from tests.budget import examples
from tests.gateway.conftest import WriteClient
from tests.integration.helpers import request_headers

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN_ID = "00f067aa0ba902b7"
VALID = f"00-{TRACE_ID}-{SPAN_ID}-01"

# Near misses as well as hits: W3C-shaped values, some with a future version, padding,
# extra fields or zero ids; then the same with one character changed anywhere.
_hex = st.text("0123456789abcdef", min_size=1, max_size=1)
_shaped = st.builds(
    lambda pad, version, trace_id, span_id, flags, more: (
        f"{pad}{version}-{trace_id}-{span_id}-{flags}{more}{pad}"
    ),
    st.sampled_from(["", " ", "\t"]),
    st.sampled_from(["00", "01", "cc", "ff", "0", "000"]),
    st.one_of(st.just("0" * 32), st.text("0123456789abcdef", min_size=32, max_size=32)),
    st.one_of(st.just("0" * 16), st.text("0123456789abcdef", min_size=16, max_size=16)),
    st.text("0123456789abcdef", min_size=2, max_size=2),
    st.sampled_from(["", "-", "-xyz", "-00"]),
)
_changed = st.builds(
    lambda value, at, char: value[:at] + char + value[at + 1 :],
    _shaped,
    st.integers(0, 60),
    st.sampled_from(["A", "g", "-", " ", "\n", "é", ""]),
)
traceparents = st.one_of(st.none(), _shaped, _changed, st.text(max_size=70))


def _otel_ids(traceparent: str) -> tuple[int, int, int] | None:
    context = trace.get_current_span(
        TraceContextTextMapPropagator().extract({TRACEPARENT: traceparent})
    ).get_span_context()
    if not context.is_valid:
        return None
    return context.trace_id, context.span_id, int(context.trace_flags)


@settings(max_examples=examples(3000))
@given(traceparents)
def test_the_check_agrees_with_opentelemetrys_propagator(traceparent: str | None) -> None:
    """Valid exactly when OpenTelemetry's W3C propagator reads a valid context from it,
    with the same ids; a malformed header is ignored, never raised."""
    headers = caller_headers(traceparent, "vendor=1")
    if traceparent is not None and ("\n" in traceparent or "\r" in traceparent):
        # No HTTP header value holds a line break; OpenTelemetry's pattern (re's `$`) lets a
        # trailing one through, the check here does not.
        assert headers is None
        return
    expected = None if traceparent is None else _otel_ids(traceparent)
    if expected is None:
        assert headers is None
        return
    assert headers is not None
    copied = dict(headers)[TRACEPARENT].decode()
    assert copied.startswith("00-")
    assert _otel_ids(copied) == expected


def test_a_tracestate_goes_with_a_valid_traceparent_only() -> None:
    assert caller_headers(VALID, "congo=t61rcWkgMzE") == [
        (TRACEPARENT, VALID.encode()),
        (TRACESTATE, b"congo=t61rcWkgMzE"),
    ]
    assert caller_headers(None, "congo=t61rcWkgMzE") is None
    assert caller_headers(VALID, "x" * 513) == [(TRACEPARENT, VALID.encode())]
    assert caller_headers(VALID, "a=\x01") == [(TRACEPARENT, VALID.encode())]
    assert caller_headers(VALID, "") == [(TRACEPARENT, VALID.encode())]


# --- on the real broker -------------------------------------------------------------------


def _post(
    client: WriteClient, path: str, body: dict[str, Any], trace_headers: dict[str, str]
) -> dict[str, Any]:
    """POST with an Idempotency-Key of its own and these headers; the answer."""
    headers = {"Idempotency-Key": str(uuid.uuid4()), **trace_headers}
    answer = client.http.post(path, json=body, headers=headers)
    assert answer.status_code == 200, answer.text
    found: dict[str, Any] = answer.json()
    return found


@pytest.mark.kafka
def test_the_write_api_copies_a_valid_traceparent_onto_the_record(write_api: WriteClient) -> None:
    channel = f"run-trace-{uuid.uuid4().hex[:8]}"
    ref = {"channel_id": channel, "key_name": "charge:1"}
    claim_body = {**ref, "tool_name": "charge", "params": {}, "worker_id": "ts-1"}
    sent = {"traceparent": VALID, "tracestate": "congo=t61rcWkgMzE"}
    claim = _post(write_api, "/v1/claims", claim_body, sent)
    # A route with an operation in its path, through the same dependency.
    op = operation_id(channel, "charge:1")
    completion = {**ref, "claim_token": claim["claim_token"], "result": 1}
    _post(write_api, f"/v1/executions/{op}/complete", completion, sent)
    carried = {TRACEPARENT: VALID.encode(), TRACESTATE: b"congo=t61rcWkgMzE"}
    assert request_headers(write_api.settings, channel) == {op: [carried, carried]}


@pytest.mark.kafka
@pytest.mark.parametrize(
    "traceparent",
    [
        f"00-{TRACE_ID}-{SPAN_ID}",  # no flags
        f"00-{TRACE_ID.upper()}-{SPAN_ID}-01",  # uppercase hex
        f"00-{'0' * 32}-{SPAN_ID}-01",  # the invalid trace id
        f"ff-{TRACE_ID}-{SPAN_ID}-01",  # the invalid version
        f"00-{TRACE_ID}-{SPAN_ID}-01-extra",  # version 00 has four fields
        "not a traceparent",
    ],
)
def test_the_write_api_ignores_a_malformed_traceparent(
    write_api: WriteClient, traceparent: str
) -> None:
    channel = f"run-trace-{uuid.uuid4().hex[:8]}"
    body = {"channel_id": channel, "key_name": "k", "tool_name": "t", "params": {}}
    sent = {"traceparent": traceparent, "tracestate": "congo=t61rcWkgMzE"}
    claim = _post(write_api, "/v1/claims", {**body, "worker_id": "ts-1"}, sent)
    assert claim["status"] == "claimed"
    assert request_headers(write_api.settings, channel) == {operation_id(channel, "k"): [{}]}
