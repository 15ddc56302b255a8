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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from drills.faults.drill import Load, LogCheck, acknowledged_lost, check_log, settle, start_serve
from drills.history.check import Verdict
from oncelog.broker.local import LocalBroker
from oncelog.producer.dispatch import Timeouts
from oncelog.projector.process import stop as stop_serve
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics
from oncelog.waiting import poll_until

_PAD_BYTES = 16 * 1024  # random hex per claim: what DuckDB cannot compress away
_CALLS = Timeouts(total_s=5.0, resend_after_s=1.0)
_FILL_BOUND_S = 180.0
#: The broker's fill is bounded by progress, not by time: on a loaded machine it takes
#: longer, but a filler that got no acknowledgement for this long while the broker still
#: ran has stalled (and so has the drill).
_STALL_S = 60.0
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
    history: Verdict | None = None  # the filler's calls, checked linearizable per operation
    acknowledged_after_halt: int = 0  # the broker: completions acknowledged once it halted
    same_address: bool = True  # the broker: restarted where serve and the clients look
    serve_exit: str | None = None  # the broker: serve's exit while it ran, a finding
    phases_s: dict[str, float] = field(default_factory=dict)  # where the time went


def projector_disk_full(settings: Settings, workdir: Path, size_mib: int = 8) -> DiskFullReport:
    """Fill the projector's DuckDB volume; it must stop, typed; grow it; it must resume."""
    report = DiskFullReport()
    with small_volume(workdir / "vol", size_mib) as vol:
        db = vol / "live.duckdb"
        log = workdir / "serve.log"
        serve = start_serve(settings, db, log)
        load = filler(settings, workdir / "history")
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


def filler(settings: Settings, history_dir: Path | None = None) -> Load:
    """One thread of claim+complete cycles whose parameters DuckDB cannot compress; its
    calls are recorded in ``history_dir`` when given."""
    return Load(settings, _CALLS, threads=1, params=lambda _: {"pad": _random_pad()},
                history_dir=history_dir)  # fmt: skip


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
    report.history = filler.check_history()


def broker_disk_full(workdir: Path, size_mib: int = 64) -> DiskFullReport:
    """Fill the broker's log directory under load; grow it, restart the broker, check.

    Each step waits on a state, each with a bound: the broker halted (or the filler
    stalled), a call after the halt failed, the broker answers again on its old address,
    and a ``get`` on every partition was decided (everything before it was).
    """
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
                _settle_serve(serve, settings, report, workdir / "serve.log")
            finally:
                stop_serve(serve)
            if report.same_address:  # else nothing of ours reaches it: the finding itself
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
    load = filler(settings, vol.parent / "history")
    load.start()
    began = time.monotonic()
    try:
        # Full: the broker dies of it (a log directory it cannot write is taken offline,
        # and with its only one offline it halts).
        report.stopped = _until_halted(broker, load)
        report.phases_s["fill"] = time.monotonic() - began
        halted_at, failed_at = len(load.completed), _failures(load)
        # A call to the dead broker must fail, typed, within its timeout.
        _until(lambda: _failures(load) > failed_at, _CALLS.total_s * 3, load)
        report.acknowledged_after_halt = len(load.completed) - halted_at
        report.message = (f"calls failed after the halt: {_failures(load) - failed_at}; "
                          f"acknowledged after it: {report.acknowledged_after_halt}")  # fmt: skip
    finally:
        load.finish()
    grow(vol, size_mib * 8)
    began = time.monotonic()
    info = broker.start()
    report.phases_s["restart"] = time.monotonic() - began
    # The old ports are taken again unless another process took one meanwhile: then serve
    # and every client would look for the broker where it no longer is.
    report.same_address = info.bootstrap == settings.bootstrap_servers
    return load


def _until_halted(broker: LocalBroker, load: Load) -> bool:
    """Wait until the broker halts; False if the filler stalls first (``_STALL_S``)."""
    seen, since = len(load.completed), time.monotonic()
    while broker.status() is not None:
        if len(load.completed) != seen:
            seen, since = len(load.completed), time.monotonic()
        elif time.monotonic() - since > _STALL_S:
            return False
        load.stop.wait(0.2)  # a JVM's exit: nothing of ours to wait on but its pid
    return True


def _failures(load: Load) -> int:
    return sum(load.typed_errors.values()) + len(load.untyped_errors)


def _until(done: Callable[[], bool], bound_s: float, load: Load) -> bool:
    return bool(poll_until(time.monotonic() + bound_s, done, sleep=load.stop.wait))


def _settle_serve(
    serve: subprocess.Popen[bytes], settings: Settings, report: DiskFullReport, log: Path
) -> None:
    """Everything on the log decided by the ``serve`` that lived through the halt; if it
    died meanwhile, that is the finding (not a ``get`` that times out for want of it)."""
    began = time.monotonic()
    if serve.poll() is None and report.same_address:
        settle(settings, _SETTLE)
    report.phases_s["settle"] = time.monotonic() - began
    if serve.poll() is not None:
        report.serve_exit = f"serve exited {serve.returncode}: {_error_line(log)}"
