"""What tracing costs the SDK per call, in process: ``python -m bench.bench_tracing``.

Not a test, and not the end-to-end figure (that is ``bench.peers --tracing`` against
``bench.peers``: docs/performance.md). Here, on the in-memory ledger (no Kafka), the
CPU microseconds a claim+complete cycle takes with tracing off, then with the SDK's provider
set (batch processor, spans dropped: bench/traced.py); and, with it on, writing a
request's ``traceparent`` and reading one back, once each per record (in general, as the
projector reads a record's, as the client reads its decision's). Last, the SDK's own cost
of a span made as a call span is, bare and with 18 attributes (a claim's): the floor under
a traced call, with no oncelog code in it.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import timeit
from collections.abc import Callable

from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.testing import InMemoryLedger
from oncelog.tracing import active, propagation


def _cycles(client: SyncLedgerClient, count: int, tag: str) -> float:
    """CPU microseconds of this process per claim+complete cycle (the median of 5 runs of
    ``count``): CPU time, not wall time, as other work on the machine stretches the latter
    (the batch processor's export thread counts: it is part of the cost)."""
    runs = []
    for r in range(5):
        began = time.process_time()
        for i in range(count):
            claim = client.claim_execution(f"{tag}-{r}", f"k{i}", tool_name="t", params={"i": i})
            client.complete_execution(claim.execution, claim.claim_token, i)
        runs.append((time.process_time() - began) / count * 1e6)
    return statistics.median(runs)


def _per_call_us(fn: Callable[[], object], number: int = 20_000) -> float:
    timer = time.process_time
    return min(timeit.repeat(fn, timer=timer, number=number, repeat=5)) / number * 1e6


def _sdk_span_us(attributes: dict[str, str | int] | None) -> float:
    """The SDK's own cost of one span as a call span is made: started, made current and
    left, then ended (through the batch processor to a dropping exporter), with
    ``attributes`` set at its end when given. No oncelog code runs here: this is the floor
    under a traced call."""
    import opentelemetry.context as context_api  # noqa: PLC0415  # tracing is on by now
    from opentelemetry import trace  # noqa: PLC0415

    tracer = trace.get_tracer("bench")

    def one() -> None:
        span = tracer.start_span("oncelog.claim", kind=trace.SpanKind.CLIENT)
        token = context_api.attach(trace.set_span_in_context(span))
        context_api.detach(token)
        if attributes:
            span.set_attributes(attributes)
        span.end()

    return _per_call_us(one, number=10_000)


def main() -> None:
    """Off, then on (a provider can be set once a process); the last line is JSON."""
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    load = os.getloadavg()[0]
    ledger = InMemoryLedger(partitions=6)
    with SyncLedgerClient(ledger.settings, transport=ledger) as client:
        _cycles(client, count // 4, "warm")
        off = _cycles(client, count, "off")
        check_off = _per_call_us(active)
        from bench import traced  # noqa: PLC0415  # sets the provider: tracing on from here

        dropped = traced.install()
        _cycles(client, count // 4, "warm-on")
        on = _cycles(client, count, "on")
    spans_made = dropped.count  # by the cycles alone
    from opentelemetry import trace  # noqa: PLC0415

    # As many attributes as a claim's call span gets (oncelog.tracing.attributes).
    eighteen: dict[str, str | int] = {
        f"oncelog.a{i}": i if i % 3 == 0 else f"v{i}" for i in range(18)
    }
    sdk_span, sdk_span_attributes = _sdk_span_us(None), _sdk_span_us(eighteen)
    with trace.get_tracer("bench").start_as_current_span("call"):
        headers = propagation.current_headers()
        inject = _per_call_us(propagation.current_headers)
    extract = _per_call_us(lambda: propagation.context_of(headers))
    # The projector's read of a record's one header (sampled_context_of), and the client's
    # of its decision's (written_context, the link to the fold).
    extract_sampled = _per_call_us(lambda: propagation.sampled_context_of(headers))
    value = propagation.traceparent_of(headers) or b""
    extract_written = _per_call_us(lambda: propagation.written_context(value))
    figures = {
        "cycle_us_off": round(off, 1),
        "cycle_us_on": round(on, 1),
        "tracing_cost_per_cycle_us": round(on - off, 1),
        "active_check_us_off": round(check_off, 3),
        "traceparent_write_us": round(inject, 2),
        "traceparent_read_us": round(extract, 2),
        "traceparent_read_projector_us": round(extract_sampled, 2),
        "traceparent_read_link_us": round(extract_written, 2),
        "sdk_span_us": round(sdk_span, 1),
        "sdk_span_18_attributes_us": round(sdk_span_attributes, 1),
        "spans_made": spans_made,
        # Other work on the machine skews every figure: say how busy it was.
        "load_avg_1m": [round(load, 2), round(os.getloadavg()[0], 2)],
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
