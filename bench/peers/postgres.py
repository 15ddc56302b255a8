"""A throwaway PostgreSQL for the side-by-side benchmark: initdb, start, stop by pid.

It uses the server binaries of Debian's ``postgresql`` package. It installs nothing: when
they are missing, :class:`PostgresMissingError` carries the command that would install them.
As root, initdb and the server run as an unprivileged user (``postgres`` when it exists,
else ``nobody``) over a temporary directory chowned to that user.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from oncelog.net import free_port

INSTALL_HINT = "sudo apt-get install postgresql   (Debian/Ubuntu: the server, initdb and pg_ctl)"
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 30.0


class PostgresMissingError(RuntimeError):
    """The PostgreSQL server binaries are not on this machine."""


@dataclass(frozen=True)
class Postgres:
    """A running throwaway server: its postmaster pid and how to reach it."""

    pid: int
    port: int
    user: str
    data: Path

    def dsn(self, database: str = "postgres") -> str:
        """A libpq URL over loopback TCP (asyncpg and SQLAlchemy both take it)."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"


def find_bindir() -> Path:
    """The directory holding ``initdb`` and ``postgres``; PostgresMissingError if none."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    on_path = shutil.which("initdb")
    if on_path:
        candidates.insert(0, str(Path(on_path).resolve().parent))
    for candidate in candidates:
        if (Path(candidate) / "initdb").exists() and (Path(candidate) / "postgres").exists():
            return Path(candidate)
    raise PostgresMissingError(
        f"no PostgreSQL server (initdb) here; install it with:\n  {INSTALL_HINT}"
    )


def _run_as() -> pwd.struct_passwd | None:
    """The unprivileged account to run as when we are root; None when we are not root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise PostgresMissingError("running as root and no unprivileged 'postgres' or 'nobody' user")


def _popen(cmd: list[str], account: pwd.struct_passwd | None, log: Path) -> subprocess.Popen[bytes]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "LANG": "C"}
    with log.open("ab") as out:
        return subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
            cwd="/", start_new_session=True,
            user=account.pw_uid if account else None, group=account.pw_gid if account else None,
            extra_groups=[] if account else None,
        )  # fmt: skip


def _initdb(bindir: Path, root: Path, account: pwd.struct_passwd | None) -> Path:
    data, log = root / "data", root / "postgres.log"
    cmd = [str(bindir / "initdb"), "-D", str(data), "-U", "bench", "-A", "trust",
           "-E", "UTF8", "--locale=C", "--no-sync"]  # fmt: skip
    code = _popen(cmd, account, log).wait(timeout=120)
    if code != 0:
        raise RuntimeError(f"initdb failed ({code}):\n{log.read_text()[-2000:]}")
    return data


def _wait_ready(proc: subprocess.Popen[bytes], data: Path, port: int, log: Path) -> int:
    """The postmaster pid, once it accepts TCP connections on ``port``."""
    deadline = time.monotonic() + START_TIMEOUT_S
    pidfile = data / "postmaster.pid"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"postgres exited ({proc.returncode}):\n{log.read_text()[-2000:]}")
        lines = pidfile.read_text().splitlines() if pidfile.exists() else []
        # postmaster.pid line 8 is the status: "ready" once it accepts connections.
        if len(lines) >= 8 and lines[7].strip() == "ready" and int(lines[3]) == port:
            return int(lines[0])
        time.sleep(0.05)  # polling the server's own status file, bounded by the deadline
    proc.kill()
    raise RuntimeError(f"postgres did not get ready within {START_TIMEOUT_S} s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT to the postmaster's pid (fast shutdown), a bounded wait, then SIGKILL."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=STOP_TIMEOUT_S)


@contextlib.contextmanager
def throwaway(max_connections: int = 200) -> Iterator[Postgres]:
    """A fresh cluster in a temp dir on a free loopback port; stopped by pid and removed after."""
    bindir = find_bindir()
    account = _run_as()
    root = Path(tempfile.mkdtemp(prefix="oncelog-pg-"))
    proc: subprocess.Popen[bytes] | None = None
    try:
        if account is not None:
            os.chown(root, account.pw_uid, account.pw_gid)
        data, port, log = _initdb(bindir, root, account), free_port(), root / "postgres.log"
        cmd = [str(bindir / "postgres"), "-D", str(data), "-p", str(port),
               "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={root}",
               "-c", f"max_connections={max_connections}"]  # fmt: skip
        proc = _popen(cmd, account, log)
        pid = _wait_ready(proc, data, port, log)
        yield Postgres(pid, port, "bench", data)
    finally:
        if proc is not None:
            _stop(proc)
        shutil.rmtree(root, ignore_errors=True)
