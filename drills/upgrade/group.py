"""The processes of one upgrade phase: ``serve`` members and loads, each of a release."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drills.upgrade import load
from drills.upgrade.release import REPO
from oncelog.projector.process import serve_env
from oncelog.projector.process import stop as stop_process
from oncelog.settings import Settings
from oncelog.waiting import poll_until


def staging(workdir: Path) -> Path:
    """A directory holding only the ``drills`` package: a child Python started there imports
    its own release's ``oncelog`` with this tree's drills."""
    stage = workdir / "stage"
    if not stage.exists():
        stage.mkdir(parents=True)
        (stage / "drills").symlink_to(REPO / "drills")
    return stage


@dataclass
class Group:
    """The phase's processes on one set of topics; ``python`` names each one's release."""

    settings: Settings
    workdir: Path
    members: dict[str, tuple[Path, subprocess.Popen[bytes]]] = field(default_factory=dict)
    loads: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def _env(self, projector_id: str = "p1") -> dict[str, str]:
        db = self.workdir / f"{projector_id}.duckdb"
        env = serve_env(
            self.settings.model_copy(update={"db_path": db, "projector_id": projector_id})
        )
        env.pop("PYTHONPATH", None)  # the child's release, never this tree's oncelog
        return env

    def _spawn(self, args: list[str], log: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
        with (self.workdir / log).open("ab") as out:
            return subprocess.Popen(args, env=env, cwd=staging(self.workdir), stdout=out,
                                    stderr=subprocess.STDOUT)  # fmt: skip

    def start_member(self, projector_id: str, python: Path) -> None:
        """``serve --no-http`` of ``python``'s release as member ``projector_id``."""
        args = [str(python), "-m", "oncelog", "serve", "--no-http"]
        proc = self._spawn(args, f"serve-{projector_id}.log", self._env(projector_id))
        self.members[projector_id] = (python, proc)

    def stop_member(self, projector_id: str) -> int:
        """SIGTERM the member (it commits what it folded), bounded."""
        _, proc = self.members.pop(projector_id)
        return stop_process(proc)

    def replace_member(self, projector_id: str, python: Path) -> None:
        """A rolling restart of one member: stopped, started again with ``python``."""
        self.stop_member(projector_id)
        self.start_member(projector_id, python)

    def start_load(self, name: str, python: Path, rivals: bool = False) -> None:
        """A load (:mod:`drills.upgrade.load`) run by ``python``'s release; with ``rivals``,
        every 4th claim is contested (answered ``in_progress``)."""
        args = [str(python), "-m", load.MODULE, name, str(self.workdir / "history")]
        args += ["--rivals"] if rivals else []
        self.loads.append(self._spawn(args, f"load-{name}.log", self._env()))

    def run_module(self, python: Path, module: str) -> str:
        """``python -m module`` on the phase's topics; its stdout."""
        args = [str(python), "-m", module]
        cwd = staging(self.workdir)
        done = subprocess.run(
            args, env=self._env(), capture_output=True, text=True, cwd=cwd, timeout=600, check=True
        )
        return done.stdout

    def acks(self) -> list[tuple[str, str]]:
        """Every completion acknowledged to a load so far: (channel, key)."""
        out: list[tuple[str, str]] = []
        for path in sorted((self.workdir / "history").glob("*.acks.jsonl")):
            for line in path.read_text().splitlines():
                if line.endswith("]"):
                    channel, key = json.loads(line)
                    out.append((channel, key))
        return out

    def wait_acks(self, more: int, timeout_s: float = 180.0) -> bool:
        """Wait (bounded) until the loads acknowledged ``more`` completions beyond now."""
        target = len(self.acks()) + more
        return bool(
            poll_until(
                time.monotonic() + timeout_s, lambda: len(self.acks()) >= target, pause_s=0.5
            )
        )

    def stop_loads(self) -> list[dict[str, Any]]:
        """SIGTERM the loads (each ends after its calls in flight); their summaries."""
        for proc in self.loads:
            proc.terminate()
        for proc in self.loads:
            proc.wait(timeout=300)
        self.loads.clear()
        return [json.loads(p.read_text()) for p in self.summaries()]

    def summaries(self) -> Iterator[Path]:
        """The loads' summary files."""
        return iter(sorted((self.workdir / "history").glob("*.summary.json")))

    def stop_all(self) -> None:
        """Every process still running, stopped (loads first)."""
        for proc in self.loads:
            if proc.poll() is None:
                proc.kill()
        for projector_id in list(self.members):
            self.stop_member(projector_id)
