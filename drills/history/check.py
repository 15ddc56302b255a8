"""Check a history with ``oncelog-linearizability`` (drills/linearizability, Porcupine).

``make linearizability`` builds the checker into ``.venv/bin``. It checks the history per
operation against the model of docs/spec.md §4 and, when the history is not linearizable,
writes Porcupine's visualization (an HTML page) beside the history.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drills.binaries import required

BINARY = "oncelog-linearizability"
_TIMEOUT_S = 300.0


class HistoryCheckError(RuntimeError):
    """The checker could not be found, or could not decide (a drill's own failure)."""


def find_checker() -> Path:
    """``oncelog-linearizability`` beside this Python (``make linearizability``), else on PATH."""
    return required(
        BINARY,
        "linearizability",
        HistoryCheckError,
        "Go >= 1.23; builds drills/linearizability with Porcupine",
    )


@dataclass(frozen=True)
class Verdict:
    """What the checker found: how many operations, how many unknown, linearizable or not."""

    operations: int
    unknown: int
    linearizable: bool
    visualization: str | None = None

    def figures(self) -> dict[str, Any]:
        """The figures a drill's last JSON line carries."""
        out: dict[str, Any] = {"operations_checked": self.operations, "unknown": self.unknown,
                               "linearizable": self.linearizable}  # fmt: skip
        if self.visualization is not None:
            out["visualization"] = self.visualization
        return out


def check(operations: Sequence[dict[str, Any]], history_path: Path) -> Verdict:
    """Write ``operations`` to ``history_path`` and check them; on a failure the
    visualization goes to the same path with ``.html``."""
    history_path.write_text(json.dumps({"operations": list(operations)}))
    html = history_path.with_suffix(".html")
    args = [str(find_checker()), "-html", str(html), str(history_path)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
    if done.returncode not in (0, 1):
        raise HistoryCheckError(
            f"{BINARY} could not decide {history_path} (exit {done.returncode}): "
            f"{done.stdout.strip()} {done.stderr.strip()}"
        )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return Verdict(found["operations"], found["unknown"], bool(found["linearizable"]),
                   found.get("visualization"))  # fmt: skip
