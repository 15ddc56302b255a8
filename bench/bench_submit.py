"""CPU time of handing one poll batch to the committer, in process.

``python -m bench.bench_submit [--batches N]``: N empty batches submitted to a
:class:`Committer` over a store that does nothing, yielding the GIL after each as the
poll loop does between polls. Process CPU time (the committer thread included) per batch.
"""

from __future__ import annotations

import argparse
import json
import time

from oncelog.projector.committer import Committer
from oncelog.projector.store import Batch, Position


class _NullStore:
    def commit(self, batch: Batch) -> None:
        """Nothing: only the hand-off is measured."""


def measure(batches: int) -> float:
    """CPU microseconds per submitted batch."""
    committer = Committer(_NullStore(), commit_interval_s=0.2)  # type: ignore[arg-type]
    work = [Batch([], [], [], {0: Position(i, None)}) for i in range(batches)]
    began = time.process_time()
    for batch in work:
        committer.submit(batch)
        time.sleep(0)
    spent = time.process_time() - began
    committer.close()
    return spent * 1e6 / batches


def main() -> None:
    """Print CPU us per batch as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=100_000)
    us = measure(parser.parse_args().batches)
    print(json.dumps({"submit_cpu_us_per_batch": round(us, 1)}))


if __name__ == "__main__":
    main()
