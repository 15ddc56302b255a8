"""The bench's broker warm-up: it waits for a JVM's compiler threads, and for nothing else."""

from __future__ import annotations

import asyncio
import itertools
import os

import pytest

from bench.peers import jit


def _run(pid: int | None, windows: list[float], **kw: float) -> float:
    async def load(seconds: float) -> None:
        windows.append(seconds)
        await asyncio.sleep(seconds)

    return asyncio.run(jit.warm(pid, load, **kw))


def test_no_broker_of_ours_means_no_warm_up() -> None:
    windows: list[float] = []
    assert _run(None, windows) == 0.0
    assert windows == []


def test_a_process_without_compiler_threads_is_quiet_after_one_window() -> None:
    # This Python process has no C1/C2 threads: its compiler ticks stay 0.
    assert jit.compiler_ticks(os.getpid()) == 0
    windows: list[float] = []
    _run(os.getpid(), windows, window_s=0.01)
    assert windows == [0.01]


def test_a_busy_compiler_keeps_the_load_running_until_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ticks = itertools.count(step=10**6)  # a million ticks per reading: never quiet
    monkeypatch.setattr(jit, "compiler_ticks", lambda pid: next(ticks))
    windows: list[float] = []
    spent = _run(1, windows, window_s=0.001, max_s=0.05)
    assert len(windows) > 1
    assert spent >= 0.05


def test_a_gone_process_reads_as_no_compiler_time() -> None:
    assert jit.compiler_ticks(2**22 + 12345) == 0  # above pid_max's default: never a live pid
