"""The previous release, installed from its tag into a virtualenv of its own.

The tag names the release; a clone without the tag (a shallow or a fresh one that did not
fetch tags) still has the commit, which the drill falls back to.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from oncelog.settings import Settings

REPO = Path(__file__).resolve().parents[2]

PREVIOUS_TAG = "v0.1.0"
"""The previous release: main before issue 42's wave (CHANGELOG.md)."""
PREVIOUS_COMMIT = "e66786cce39f445145f3a60fb71b1cd3a2b9c99a"
"""The commit :data:`PREVIOUS_TAG` points at, for a clone without tags."""

_INSTALL_TIMEOUT_S = 900.0


class ReleaseError(RuntimeError):
    """The previous release could not be found (the drill's own failure)."""


@dataclass(frozen=True)
class Release:
    """An installed release: its name, commit and the Python of its virtualenv."""

    name: str
    commit: str
    python: Path


def cache_dir() -> Path:
    """Where the releases' sources and virtualenvs are kept: beside the broker's jars
    (``ONCELOG_CACHE_DIR``)."""
    return Settings().cache_dir


def _git(*args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() if done.returncode == 0 else ""


def resolve(tag: str = PREVIOUS_TAG, commit: str = PREVIOUS_COMMIT) -> tuple[str, str]:
    """(name, commit) of the previous release: its tag when the clone has it, else its
    commit; :class:`ReleaseError` when the clone has neither."""
    by_tag = _git("rev-parse", "--verify", "--quiet", f"{tag}^{{commit}}")
    if by_tag:
        return tag, by_tag
    if _git("rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}"):
        return commit[:12], commit
    raise ReleaseError(
        f"neither the tag {tag} nor the commit {commit[:12]} is in {REPO}:"
        " fetch the tags (`git fetch --tags`) or clone without --depth"
    )


def install(tag: str = PREVIOUS_TAG, commit: str = PREVIOUS_COMMIT) -> Release:
    """The previous release installed (not editable) into ``venv-<name>`` under
    :func:`cache_dir`, from a ``git archive`` of its commit; reused once installed."""
    name, sha = resolve(tag, commit)
    root = cache_dir()
    src, venv = root / f"src-{name}", root / f"venv-{name}"
    python = venv / "bin" / "python"
    stamp = venv / f".installed-{sha}"
    if stamp.exists():
        return Release(name, sha, python)
    src.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", sha], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q", "-c", str(src / "constraints.txt")]
    subprocess.run([*pip, str(src)], check=True, timeout=_INSTALL_TIMEOUT_S)
    stamp.touch()
    return Release(name, sha, python)
