"""``python -m drills.retention [--requests N] [--tail N] [--workdir DIR]``.

The retention drill (:mod:`drills.retention.run`) on a broker of its own; the last line is
one JSON object with its figures, and the exit status is 1 when a check failed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from rich.console import Console

from drills.retention.run import retention_drill

console = Console(highlight=False, soft_wrap=True, stderr=True)


def main() -> None:
    """Run the drill and print its figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--tail", type=int, default=10_000, help="requests after the trim")
    parser.add_argument("--workdir", type=Path, default=None, help="kept (default: a temp dir)")
    args = parser.parse_args()
    if args.workdir is not None:
        figures = retention_drill(args.workdir, args.requests, args.tail, console.print)
    else:
        with tempfile.TemporaryDirectory(prefix="oncelog-retention-") as tmp:
            figures = retention_drill(Path(tmp), args.requests, args.tail, console.print)
    print(json.dumps(figures, sort_keys=True))
    raise SystemExit(0 if figures["ok"] else 1)


if __name__ == "__main__":
    main()
