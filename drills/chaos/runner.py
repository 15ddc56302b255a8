"""Plan the runs, execute them on a pool of worker processes, and score them.

Each run is two real processes started from a forkserver (so the imports are
paid once): the first attempt, which SIGKILLs itself at the crash point, then
the retry, a fresh process that runs the same workflow to completion.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from drills.chaos import worker
from drills.chaos.env import Environment
from drills.chaos.model import CELLS, CRASH_POINTS, EXTERNAL_STEPS, RunSpec
from oncelog.waiting import poll_until

_ATTEMPT_TIMEOUT_S = 120.0
_UNKNOWN_EXIT = 255  # what the forkserver reports when it lost a child's status
_ctx = multiprocessing.get_context("forkserver")
# Workers fork from a server that already imported the SDK and librdkafka's
# bindings: a fresh process costs a fork, not an interpreter start.
_ctx.set_forkserver_preload(["drills.chaos.worker"])


@dataclass(frozen=True)
class ChaosConfig:
    """Which cells and crash points, how many runs of each, how many at once."""

    runs: int = 24
    points: Sequence[str] = CRASH_POINTS
    cells: Sequence[tuple[str, str]] = CELLS
    concurrency: int = 8


@dataclass
class Outcome:
    """What one run's two processes did."""

    spec: RunSpec
    crash_exit: int | None
    retry_exit: int | None
    steps: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    finished: bool = False

    crash_reached: bool = False

    @property
    def crashed(self) -> bool:
        """True when the first attempt reached its crash point and died of it.

        The exit code comes through the forkserver, which now and then reports
        255 ("unknown") for a process that did exit: the marker the attempt
        writes just before its SIGKILL is the evidence that counts.
        """
        return self.crash_reached and self.crash_exit in (-signal.SIGKILL, _UNKNOWN_EXIT)

    @property
    def retried(self) -> bool:
        """True when the retry ran the workflow to its end (it recorded so, without error)."""
        return self.finished and self.error is None and self.retry_exit in (0, _UNKNOWN_EXIT)


def plan(config: ChaosConfig, env: Environment, workdir: Path) -> list[RunSpec]:
    """Every run, interleaved so that the pool mixes cells and crash points."""
    session = uuid.uuid4().hex[:6]
    settings = env.settings
    assert settings.bootstrap_servers is not None
    specs = []
    for index in range(config.runs):
        for strategy, mode in config.cells:
            for point in config.points:
                channel = f"chaos-{session}-{strategy}-{mode}-{point}-{index}"
                specs.append(RunSpec(
                    strategy=strategy, mode=mode, point=point, index=index,
                    channel_id=channel, crash_step=EXTERNAL_STEPS[index % len(EXTERNAL_STEPS)],
                    downstream_url=env.downstreams[mode], bootstrap=settings.bootstrap_servers,
                    topic_prefix=settings.topic_prefix, partitions=settings.partitions,
                    result_path=str(workdir / f"{channel}.json"),
                ))  # fmt: skip
    return specs


def _gone(pid: int | None) -> bool:
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _attempt(spec: RunSpec) -> int | None:
    proc = _ctx.Process(target=worker.run, args=(spec,), name=spec.channel_id)
    proc.start()
    proc.join(_ATTEMPT_TIMEOUT_S)
    if proc.exitcode is None:  # hung: count it as such, and do not leave it behind
        proc.kill()
        proc.join(10)
        return None
    # The retry must never overlap the attempt it retries: make sure it is gone.
    # The forkserver reaps its children asynchronously.
    poll_until(time.monotonic() + 10, lambda: _gone(proc.pid), pause_s=0.01)
    return proc.exitcode


def execute(spec: RunSpec) -> Outcome:
    """The crashing attempt, then the retry; read what the retry recorded."""
    crash_exit = _attempt(replace(spec, crash_point=spec.point))
    retry_exit = _attempt(spec)
    outcome = Outcome(spec, crash_exit, retry_exit)
    outcome.crash_reached = worker.crash_marker(spec.result_path).exists()
    path = Path(spec.result_path)
    if path.exists():
        data = json.loads(path.read_text())
        outcome.steps, outcome.error, outcome.finished = data["steps"], data["error"], True
    elif retry_exit != 0:
        outcome.error = f"the retry exited with {retry_exit} and recorded nothing"
    return outcome


def run_all(
    specs: Sequence[RunSpec], concurrency: int, progress: Callable[[int, int], None] | None = None
) -> list[Outcome]:
    """Execute ``specs`` with ``concurrency`` runs in flight at once."""
    done: list[Outcome] = []
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="chaos-run") as pool:
        for outcome in pool.map(execute, specs):
            done.append(outcome)
            if progress is not None:
                progress(len(done), len(specs))
    return done


def elapsed_since(start: float) -> float:
    """Seconds since a ``time.monotonic()`` reading."""
    return time.monotonic() - start
