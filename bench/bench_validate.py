"""CPU time of ``check_request`` per request, in process.

``python -m bench.bench_validate [--operations N]``: a claim and a completion of each of
N fresh operations over 64 channels (the bench workload's shape), checked in order.
"""

from __future__ import annotations

import argparse
import json
import time

from bench.synthetic import claim_complete
from oncelog.identity.partitioner import partition_for
from oncelog.referee.validate import check_request

PARTITIONS = 6


def measure(operations: int) -> float:
    """CPU microseconds per checked request."""
    requests = [r for i in range(operations) for r in claim_complete(f"ch-{i % 64}", f"k-{i}")]
    homes = {r.channel_id: partition_for(r.channel_id, PARTITIONS) for r in requests}
    began = time.process_time()
    for r in requests:
        check_request(r, r.operation_id.encode(), homes[r.channel_id], PARTITIONS)
    return (time.process_time() - began) * 1e6 / len(requests)


def main() -> None:
    """Print CPU us per request as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--operations", type=int, default=20_000)
    us = measure(parser.parse_args().operations)
    print(json.dumps({"check_request_cpu_us": round(us, 2)}))


if __name__ == "__main__":
    main()
