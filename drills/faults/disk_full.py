"""Full disks: the projector's DuckDB volume, and the broker's log directory.

Each case mounts a small tmpfs of its own (the drill runs as root; ``mount -t tmpfs``
is the honest way to make a volume run out of space: the writer sees ``ENOSPC`` from the
kernel, as on a full disk), fills it with claims of large random parameters, and then:

- **projector**: ``serve`` must stop with a typed ``disk_full`` error naming the DuckDB
  path; after the volume grows (``mount -o remount,size=``) a new ``serve`` resumes from
  its last commit, every acknowledged completion is ``COMPLETED``, every request decided,
  and ``verify`` finds no difference;
- **broker**: writes are refused (callers get typed errors only) and never acknowledged
  and then lost: after the volume grows and the broker restarts, every acknowledged
  completion is ``COMPLETED`` and every request on the log decided.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from drills.faults.drill import Load, LogCheck, acknowledged_lost, check_log, settle, start_serve
from oncelog.broker.local import LocalBroker
from oncelog.producer.dispatch import Timeouts
from oncelog.projector.process import stop as stop_serve
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

_PAD_BYTES = 16 * 1024  # random hex per claim: what DuckDB cannot compress away
_CALLS = Timeouts(total_s=5.0, resend_after_s=1.0)
_FILL_BOUND_S = 180.0
_SETTLE = Timeouts(total_s=120, resend_after_s=5)


@contextlib.contextmanager
def small_volume(path: Path, size_mib: int) -> Iterator[Path]:
    """A tmpfs of ``size_mib`` MiB mounted at ``path`` (made here), unmounted afterwards."""
    path.mkdir(parents=True, exist_ok=True)
    _mount(["-t", "tmpfs", "-o", f"size={size_mib}m", "tmpfs", str(path)])
    try:
        yield path
    finally:
        _mount(["-l", str(path)], command="umount")


def grow(path: Path, size_mib: int) -> None:
    """Give the tmpfs at ``path`` room again: space returns."""
    _mount(["-o", f"remount,size={size_mib}m", str(path)])


def _mount(args: list[str], command: str = "mount") -> None:
    done = subprocess.run([command, *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{command} {' '.join(args)} failed: {done.stderr.strip()}")


def can_mount() -> bool:
    """Whether this process may mount a tmpfs (root, and a sandbox that allows it)."""
    return os.geteuid() == 0


@dataclass
class DiskFullReport:
    """What a full volume did, and the checks once it had room again."""

    stopped: bool = False  # the projector exited / the broker refused writes
    message: str = ""  # the projector's last error line, or the broker's refusals
    acknowledged: int = 0
    lost: int = 0
    typed_errors: dict[str, int] = field(default_factory=dict)
    untyped_errors: list[str] = field(default_factory=list)
    log: LogCheck = field(default_factory=LogCheck)


def projector_disk_full(settings: Settings, workdir: Path, size_mib: int = 8) -> DiskFullReport:
    """Fill the projector's DuckDB volume; it must stop, typed; grow it; it must resume."""
    report = DiskFullReport()
    with small_volume(workdir / "vol", size_mib) as vol:
        db = vol / "live.duckdb"
        log = workdir / "serve.log"
        serve = start_serve(settings, db, log)
        load = filler(settings)
        load.start()
        try:
            report.stopped = _exited(serve, _FILL_BOUND_S)
        finally:
            load.finish()
            stop_serve(serve)
        report.message = _error_line(log)
        grow(vol, 512)
        serve = start_serve(settings, db, workdir / "serve-again.log")
        try:
            settle(settings, _SETTLE)
        finally:
            stop_serve(serve)
        _judge(report, load, settings, db, workdir)
    return report


def _exited(proc: subprocess.Popen[bytes], bound_s: float) -> bool:
    try:
        proc.wait(timeout=bound_s)
    except subprocess.TimeoutExpired:
        return False
    return True


def _error_line(log: Path) -> str:
    """serve's last error, from ``error [code]`` to the end of its log, its lines joined:
    the console wraps a long path where it must."""
    text = log.read_text(errors="replace")
    at = text.rfind("error [")
    return "" if at < 0 else "".join(text[at:].splitlines())


def filler(settings: Settings) -> Load:
    """One thread of claim+complete cycles whose parameters DuckDB cannot compress."""
    return Load(settings, _CALLS, threads=1, params=lambda _: {"pad": _random_pad()})


def _random_pad() -> str:
    return os.urandom(_PAD_BYTES // 2).hex()


def _judge(
    report: DiskFullReport, filler: Load, settings: Settings, db: Path, workdir: Path
) -> None:
    report.acknowledged = len(filler.completed)
    report.lost = acknowledged_lost(db, filler.completed)
    report.typed_errors = dict(filler.typed_errors)
    report.untyped_errors = filler.untyped_errors
    report.log = check_log(settings, db, workdir / "scratch.duckdb")


def broker_disk_full(workdir: Path, size_mib: int = 64) -> DiskFullReport:
    """Fill the broker's log directory under load; grow it, restart the broker, check."""
    report = DiskFullReport()
    with small_volume(workdir / "broker-vol", size_mib) as vol:
        # A restart after the halt recovers unflushed segments: minutes on a loaded machine.
        own = Settings(bootstrap_servers=None, data_dir=vol, broker_start_timeout_s=240)
        broker = LocalBroker(own)
        try:
            info = broker.start()
            settings = Settings(bootstrap_servers=info.bootstrap, topic_prefix="full",
                                partitions=3, data_dir=vol)  # fmt: skip
            create_topics(admin_client(settings, info.bootstrap), ledger_topics(settings))
            db = workdir / "live.duckdb"
            serve = start_serve(settings, db, workdir / "serve.log")
            try:
                load = _fill_broker(broker, settings, report, vol, size_mib)
                settle(settings, _SETTLE)
            finally:
                stop_serve(serve)
            _judge(report, load, settings, db, workdir)
        finally:
            broker.stop()
            # The broker's log lives on the volume, which goes with it: keep a copy.
            if (vol / "broker" / "broker.log").exists():
                shutil.copy(vol / "broker" / "broker.log", workdir / "broker.log")
    return report


def _fill_broker(
    broker: LocalBroker, settings: Settings, report: DiskFullReport, vol: Path, size_mib: int
) -> Load:
    load = filler(settings)
    load.start()
    deadline = time.monotonic() + _FILL_BOUND_S
    try:
        # Full: the broker died of it (a log directory it cannot write is taken offline,
        # and with its only one offline it halts), or writes keep failing.
        while broker.status() is not None and time.monotonic() < deadline:
            load.stop.wait(0.5)  # polling a JVM's pid: nothing of ours to wait on
        report.stopped = broker.status() is None
        halted_at = len(load.completed)
        load.stop.wait(3.0)  # calls sent to the dead broker: refused, typed
        report.message = f"acknowledged after the halt: {len(load.completed) - halted_at}"
    finally:
        load.finish()
    grow(vol, size_mib * 8)
    broker.start()
    return load
