"""``python -m drills.chaos [--runs N] [--points a,b] [--strategies s,t] [--json PATH]``."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from drills.chaos.harness import failed_expectations, run_chaos
from drills.chaos.model import CELLS, CRASH_POINTS, STRATEGIES
from drills.chaos.report import print_report
from drills.chaos.runner import ChaosConfig
from oncelog.broker.local import broker_for_run
from oncelog.settings import Settings


def _choices(text: str, allowed: tuple[str, ...], what: str) -> list[str]:
    picked = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in picked if t not in allowed]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (choose from {', '.join(allowed)})")
    return picked


def parse(argv: list[str] | None = None) -> tuple[ChaosConfig, Path]:
    """The command line as a config and the JSON path."""
    parser = argparse.ArgumentParser(prog="python -m drills.chaos", description=__doc__)
    parser.add_argument("--runs", type=int, default=24, help="runs per strategy x crash point")
    parser.add_argument("--points", default=",".join(CRASH_POINTS))
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--json", type=Path, default=Path("chaos-matrix.json"))
    parser.add_argument("--concurrency", type=int, default=8, help="runs in flight at once")
    args = parser.parse_args(argv)
    points = _choices(args.points, CRASH_POINTS, "crash points")
    strategies = _choices(args.strategies, STRATEGIES, "strategies")
    cells = [c for c in CELLS if c[0] in strategies]
    return ChaosConfig(args.runs, points, cells, args.concurrency), args.json


def main(argv: list[str] | None = None) -> None:
    """Run the matrix; exit 1 when an expectation fails."""
    config, json_path = parse(argv)
    console = Console(highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console = Console(highlight=False, soft_wrap=True, width=160)  # piped: no 80-column squeeze
    total = config.runs * len(config.points) * len(config.cells)
    console.print(f"{total} runs, {config.concurrency} at a time")

    def progress(done: int, of: int) -> None:
        if done % 50 == 0 or done == of:
            console.print(f"  {done}/{of} runs done")

    base = Settings()
    with broker_for_run(base) as broker:  # stopped afterwards only if started here
        on_broker = base.model_copy(update={"bootstrap_servers": broker.bootstrap})
        report = run_chaos(on_broker, config, progress=progress)
    print_report(report, console, json_path)
    if failed_expectations(report):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
