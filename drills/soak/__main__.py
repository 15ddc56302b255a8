"""``make soak``: ``python -m drills.soak [--minutes M] [--rate R] [--out DIR]``.

A steady load of claim+complete cycles (``--rate`` a second, a small fraction of the
box's rate) from load processes of which one is SIGKILLed every minute, with periodic
projector kills, a broker restart and network faults, sampled every 10 s. It writes the
samples (``soak.csv``, and ``soak.json`` with the figures) and a plot (``soak.png``) to
``--out``; the last line is one JSON object with the figures. Exit 1 when a criterion
failed (``failed`` names them).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from rich.console import Console

from drills.soak.plot import plot
from drills.soak.report import figures, write_csv
from drills.soak.run import SoakConfig, soak

console = Console(highlight=False, soft_wrap=True)
DOCS_OUT = Path(__file__).resolve().parents[2] / "docs" / "img"


def main() -> None:
    """Run the soak, write its samples and plot, print its figures."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=20.0, help="cycles a second, in all")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--out", type=Path, default=DOCS_OUT, help="soak.csv/json/png here")
    parser.add_argument(
        "--duckdb-memory-mb", type=int, default=96, help="serve's DuckDB memory limit (0: unset)"
    )
    args = parser.parse_args()
    config = SoakConfig(
        seconds=args.minutes * 60, rate=args.rate, workers=args.workers,
        duckdb_memory_mb=args.duckdb_memory_mb or None,
    )  # fmt: skip
    workdir = Path(tempfile.mkdtemp(prefix="oncelog-soak-"))
    console.print(f"soak: {args.minutes:g} min at {args.rate:g} cycles/s ({workdir})")
    run = soak(config, workdir)
    out = figures(config, run)
    out["workdir"] = str(workdir)
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(run, args.out / "soak.csv")
    faults = [(a.start_s, a.event.kind) for a in run.applied if a.event.kind != "worker_crash"]
    plot(run.samples, faults, args.out / "soak.png")
    (args.out / "soak.json").write_text(json.dumps(out, indent=1) + "\n")
    for crash in run.serve_crashes[:5]:
        console.print(f"  finding: {crash}", markup=False)
    print(json.dumps(out))
    raise SystemExit(0 if out["ok"] else 1)


if __name__ == "__main__":
    main()
