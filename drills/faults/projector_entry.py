"""``oncelog serve`` with its fault hook: SIGKILL itself after publishing a batch, pre-commit.

Usage: ``python -m drills.faults.projector_entry (--kill-before-commit N | --kill-on-sigusr1)
[--db PATH] [--no-http]``: after publishing batch N, or the first batch published after a
SIGUSR1 (a test's "die now, with something published and not committed").
The broker, topics and port come from the environment, as for ``oncelog serve``
(see :func:`oncelog.projector.process.serve_env`). The product's CLI has no such
option: a crash between publishing and committing is a test's schedule, not a setting.
"""

from __future__ import annotations

import argparse
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


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and serve until killed (or stopped)."""
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__)
    when = parser.add_mutually_exclusive_group(required=True)
    when.add_argument("--kill-before-commit", type=int, metavar="N")
    when.add_argument("--kill-on-sigusr1", action="store_true")
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument("--no-http", action="store_true")
    args = parser.parse_args(argv)
    if args.kill_on_sigusr1:
        hook = kill_before_commit_once_armed()
    elif args.kill_before_commit < 1:
        parser.error("--kill-before-commit must be at least 1")
    else:
        hook = kill_before_commit(args.kill_before_commit)
    run_serve(serve_settings(args.db), http=not args.no_http, before_commit=hook)


if __name__ == "__main__":
    main()
