"""The client's own CPU per claim and completion, without Kafka or asyncio.

    python -m bench.bench_client_path [--calls N]

What a call costs the SDK between the caller and the producer, and between the listener
and the caller: build and validate the request, encode it, pick its partition; then decode
the decision and interpret it (``Claim`` / ``Execution``). The decisions are folded ahead of
time, outside the timing. Process CPU time per call. Not a test.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from oncelog.identity.partitioner import partition_for
from oncelog.producer.calls import PendingCall, RequestBuilder
from oncelog.referee.fold import fold
from oncelog.schemas.codec import decode_decision, encode_decision, encode_request
from oncelog.schemas.models import ExecutionState

Call = PendingCall[Any]

T0 = 1_700_000_000_000


def _decided(call: Call, state: ExecutionState | None, at: int) -> bytes:
    decision = fold(state, call.request, at)[1]
    return encode_decision(decision._replace(source_partition=0, source_offset=at - T0))


def _timed(calls: list[tuple[Call, bytes]]) -> float:
    began = time.process_time()
    for call, decided in calls:
        encode_request(call.request)
        partition_for(call.request.channel_id, 6)
        call.interpret(decode_decision(decided))
    return time.process_time() - began


def measure(n: int) -> dict[str, float]:
    """CPU µs per call: building a claim, and the rest of a claim and of a completion."""
    builder = RequestBuilder("bench-worker")
    began = time.process_time()
    claims = [
        builder.claim_execution("run-1", f"k-{i}", tool_name="search", params={"q": "x", "i": i})
        for i in range(n)
    ]
    build_claim = time.process_time() - began
    states = [fold(None, c.request, T0 + i)[0] for i, c in enumerate(claims)]
    done = [
        builder.complete_execution(
            c.request.operation_id, c.request.claim_token or "", {"ok": i},
            channel_id="run-1", key_name=f"k-{i}",
        )
        for i, c in enumerate(claims)
    ]  # fmt: skip
    claim_rest = _timed([(c, _decided(c, None, T0 + i)) for i, c in enumerate(claims)])
    complete_rest = _timed(
        [(d, _decided(d, s, T0 + n + i)) for i, (d, s) in enumerate(zip(done, states, strict=True))]
    )
    return {
        "build_claim_us": round(build_claim / n * 1e6, 1),
        "claim_encode_decode_interpret_us": round(claim_rest / n * 1e6, 1),
        "complete_encode_decode_interpret_us": round(complete_rest / n * 1e6, 1),
    }


def main() -> None:
    """Print the figures as one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    print(json.dumps(measure(args.calls)))


if __name__ == "__main__":
    main()
