"""Print the matrix (rich), write it as JSON, and end with the matrix on one line."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from drills.chaos.harness import ChaosReport, failed_expectations


def table(report: ChaosReport) -> Table:
    """Duplicates / lost per strategy x crash point, and for a ledger strategy where the
    audit lists the duplicates: stale completions / unknown outcomes not reconciled /
    not at all."""
    points = list(report.config.points)
    out = Table(
        title=f"chaos matrix: duplicates / lost ({report.config.runs} runs per cell); "
        "audit: stale / unknown / unlisted"
    )
    out.add_column("strategy / downstream")
    for point in points:
        out.add_column(point, justify="center")
    for name, cells in report.cells.items():
        row = [name]
        for point in points:
            c = cells.get(point)
            if c is None:
                row.append("-")
                continue
            style = "green" if c.duplicates == 0 and c.lost == 0 else "red"
            text = f"[{style}]{c.duplicates} / {c.lost}[/{style}]"
            if not name.startswith("naive/"):
                listed = "green" if c.unlisted == 0 else "red"
                text += (
                    f"\n[{listed}]{c.listed_stale} / {c.listed_unknown} / {c.unlisted}[/{listed}]"
                )
            row.append(text)
        out.add_row(*row)
    return out


def print_report(report: ChaosReport, console: Console, json_path: Path | None) -> None:
    """Print everything; the last line printed is the matrix as one JSON object."""
    console.print(table(report))
    for name, points in report.cross_check.items():
        for point, c in points.items():
            if c["duplicated_steps"]:
                console.print(
                    f"cross-check {name} at {point}: {c['in_ledger']} of "
                    f"{c['duplicated_steps']} duplicated steps shown by the ledger "
                    "(suspected_duplicates or the reclaimed attempt's record)"
                )
    lin = report.linearizability
    console.print(f"history: {lin['operations_checked']} calls checked per operation, "
                  f"{lin['unknown']} unknown, linearizable: {lin['linearizable']}")  # fmt: skip
    failed = failed_expectations(report)
    for line in failed:
        console.print(f"[red]EXPECTATION FAILED[/red] {line}")
    if not failed:
        console.print("[green]all expectations hold[/green]")
    console.print(f"runtime {report.seconds:.0f} s")
    if json_path is not None:
        json_path.write_text(json.dumps(report.document(), indent=2) + "\n")
        console.print(f"wrote {json_path}")
    last = {**report.matrix, **report.audit, "linearizability": report.linearizability}
    print(json.dumps(last, separators=(",", ":")), flush=True)
