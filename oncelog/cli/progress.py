"""The progress bar of the long commands (``rebuild``, ``verify``): on a terminal only.

The core reports progress through a plain callback (``(partition, records)`` every
10k records, see :mod:`oncelog.projector.bulk_rebuild`); this module turns it into a
rich bar on stderr with records/s and an ETA against the log's end offsets. Piped,
redirected or with ``--json``, nothing is drawn: the output stays what a script reads.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

RefoldProgress = Callable[[int, int], None]  # (partition, records done in it since the last)


def wanted(as_json: bool, stream: TextIO | None = None) -> bool:
    """Draw a bar? Only on a terminal (stderr by default, where it is drawn), never for JSON.

    Asks the stream itself, not rich: rich treats ``FORCE_COLOR`` as a terminal, and a
    CI log with it set must not fill with bar frames.
    """
    target = sys.stderr if stream is None else stream
    return not as_json and target.isatty()


class RecordsPerSecondColumn(ProgressColumn):
    """The task's recent speed, as ``12,345 records/s``."""

    def render(self, task: Task) -> Text:
        """The speed rich estimates over its recent samples (``?`` until it has two)."""
        speed = task.finished_speed or task.speed
        shown = "?" if speed is None else f"{speed:,.0f}"
        return Text(f"{shown} records/s", style="progress.data.speed")


@contextmanager
def refold_progress(label: str, total: int, *, enabled: bool) -> Iterator[RefoldProgress | None]:
    """A callback advancing a bar of ``total`` records on stderr; None when not ``enabled``."""
    if not enabled:
        yield None
        return
    columns = (
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        RecordsPerSecondColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task(label, total=total)
        yield lambda _partition, records: bar.advance(task, records)
