"""``oncelog serve`` with a fault hook: die after publishing a batch, or stop before it.

Usage: ``python -m drills.faults.projector_entry (--kill-before-commit N | --kill-on-sigusr1
| --stop-on-sigusr2 BATCH_FILE) [--db PATH] [--no-http]``. The first two SIGKILL the process
after publishing batch N, or the first batch published after a SIGUSR1 (a test's "die now,
with something published and not committed"). The third SIGSTOPs it once, before publishing
the first batch folded after a SIGUSR2, having written that batch's request positions to
BATCH_FILE: a zombie that, once continued, publishes what it folded while the group had
given its partitions to another member.
The broker, topics and port come from the environment, as for ``oncelog serve``
(see :func:`oncelog.projector.process.serve_env`). The product's CLI has no such
option: a crash between publishing and committing is a test's schedule, not a setting.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

from oncelog.cli.serve_cmd import run_serve, serve_settings

MODULE = "drills.faults.projector_entry"


def kill_before_commit(batches: int) -> Callable[[], None]:
    """A ``before_commit`` hook that SIGKILLs this process at its ``batches``-th call."""
    seen = 0

    def before_commit() -> None:
        nonlocal seen
        seen += 1
        if seen >= batches:
            os.kill(os.getpid(), signal.SIGKILL)

    return before_commit


def kill_before_commit_once_armed() -> Callable[[], None]:
    """A ``before_commit`` hook that SIGKILLs this process at its first call after SIGUSR1."""
    armed = threading.Event()
    signal.signal(signal.SIGUSR1, lambda _signum, _frame: armed.set())

    def before_commit() -> None:
        if armed.is_set():
            os.kill(os.getpid(), signal.SIGKILL)

    return before_commit


def stop_before_publish_once_armed(batch_file: Path) -> Callable[[list[tuple[int, int]]], None]:
    """A ``before_publish`` hook that SIGSTOPs this process at its first call after SIGUSR2.

    Before stopping it writes the batch's request positions to ``batch_file`` (JSON), so
    a test can find the zombie's publications on the log.
    """
    armed = threading.Event()
    signal.signal(signal.SIGUSR2, lambda _signum, _frame: armed.set())

    def before_publish(positions: list[tuple[int, int]]) -> None:
        if armed.is_set():
            armed.clear()  # once: continued, it publishes and goes on as a zombie would
            batch_file.write_text(json.dumps(positions))
            os.kill(os.getpid(), signal.SIGSTOP)

    return before_publish


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and serve until killed (or stopped)."""
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__)
    when = parser.add_mutually_exclusive_group(required=True)
    when.add_argument("--kill-before-commit", type=int, metavar="N")
    when.add_argument("--kill-on-sigusr1", action="store_true")
    when.add_argument("--stop-on-sigusr2", type=Path, metavar="BATCH_FILE")
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument("--no-http", action="store_true")
    args = parser.parse_args(argv)
    settings = serve_settings(args.db)
    if args.stop_on_sigusr2:
        zombie = stop_before_publish_once_armed(args.stop_on_sigusr2)
        run_serve(settings, http=not args.no_http, before_publish=zombie)
        return
    if args.kill_on_sigusr1:
        hook = kill_before_commit_once_armed()
    elif args.kill_before_commit < 1:
        parser.error("--kill-before-commit must be at least 1")
    else:
        hook = kill_before_commit(args.kill_before_commit)
    run_serve(settings, http=not args.no_http, before_commit=hook)


if __name__ == "__main__":
    main()
