"""The compiled core: built modules import compiled, and ONCELOG_INTERPRETED=1 runs source."""

from __future__ import annotations

import importlib.machinery
import os
import re
from pathlib import Path

import pytest

from oncelog import _compiled
from tests.probe import probe

ROOT = Path(__file__).resolve().parents[1]

_PROBE = (
    "import importlib, oncelog\n"
    "from oncelog._compiled import COMPILED, is_compiled\n"
    "print(' '.join(str(int(is_compiled(importlib.import_module(n)))) for n in COMPILED))\n"
)


def _compiled_flags(**env: str) -> list[bool]:
    """Which of the compiled modules a fresh interpreter imports compiled, under ``env``
    (:func:`tests.probe.probe`: from outside the clone, as an install finds them)."""
    return [flag == "1" for flag in probe(_PROBE, **env)]


def test_every_built_module_imports_compiled() -> None:
    built = [_compiled.extension_path(name) is not None for name in _compiled.COMPILED]
    if not any(built):
        pytest.skip("no extensions built here (ONCELOG_INTERPRETED=1 at build time)")
    stale = [_compiled.source_path(n) for n in _compiled.COMPILED if _compiled._stale(n)]
    assert not stale, f"edited since the build, make venv rebuilds: {stale}"
    assert _compiled_flags() == built


def test_the_switch_imports_every_compiled_module_from_source() -> None:
    assert _compiled_flags(ONCELOG_INTERPRETED="1") == [False] * len(_compiled.COMPILED)


def test_a_stale_extension_sends_every_module_to_its_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    source = tmp_path.joinpath(*_compiled.COMPILED[0].split(".")).with_suffix(".py")
    source.parent.mkdir(parents=True)
    built = source.with_suffix(importlib.machinery.EXTENSION_SUFFIXES[0])
    built.write_bytes(b"")
    source.write_text("")
    os.utime(built, (1_000_000, 1_000_000))
    monkeypatch.setattr(_compiled, "_PACKAGE_ROOT", tmp_path / "oncelog")
    # All of them: a compiled caller would still run the stale module's old code.
    assert _compiled.routed({}) == frozenset(_compiled.COMPILED)
    os.utime(source, (999_000, 999_000))  # rebuilt since the edit
    assert _compiled.routed({}) == frozenset()


def test_make_rebuilds_when_any_compiled_source_changes() -> None:
    found = re.search(r"^CORE_SRC := (.*)$", (ROOT / "Makefile").read_text(), re.MULTILINE)
    assert found is not None
    sources = {_compiled.source_path(n).relative_to(ROOT).as_posix() for n in _compiled.COMPILED}
    assert set(found.group(1).split()) == sources
