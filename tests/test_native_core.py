"""The Rust extension: a built checkout imports it, ONCELOG_INTERPRETED=1 runs without it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from oncelog import _compiled, native_core

ROOT = Path(__file__).resolve().parents[1]

_PROBE = (
    "import sys\n"
    "from oncelog.native_core import NATIVE\n"
    "print(NATIVE is not None and NATIVE is sys.modules['oncelog._native'])\n"
    "print('oncelog._native' in sys.modules)\n"
    "from oncelog.schemas import codec\n"
    "print(getattr(codec._FAST_REQUESTS.read_current, '__self__', codec).__class__.__name__)\n"
)


def _probe(**env: str) -> list[str]:
    """What a fresh interpreter's ``NATIVE`` is under ``env``: [is the extension, loaded,
    the class reading the codec's requests].

    Run from outside the clone's root, as tests/test_compiled_core.py does: the extension
    must be found through the installed package, not the working directory.
    """
    environ = {k: v for k, v in os.environ.items() if k != _compiled.INTERPRETED_ENV}
    return subprocess.run(
        [sys.executable, "-c", _PROBE],
        env=environ | env,
        cwd=ROOT / "tests",
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()


def _core_built() -> bool:
    return any(_compiled.extension_path(name) for name in _compiled.COMPILED)


def test_a_built_checkout_imports_the_extension() -> None:
    # The same builds make both: the compiled core without this one is a build that skipped it.
    if not _core_built():
        pytest.skip("no extensions built here (ONCELOG_INTERPRETED=1 at build time)")
    assert _probe() == ["True", "True", "AvroReader"]


def test_the_switch_runs_without_the_extension() -> None:
    assert _probe(ONCELOG_INTERPRETED="1") == ["False", "False", "module"]


def test_the_native_switch_turns_off_the_extension_alone() -> None:
    assert _probe(ONCELOG_NATIVE="0") == ["False", "False", "module"]
    assert native_core.load({native_core.NATIVE_ENV: "0"}) is None
    assert native_core.load({native_core.NATIVE_ENV: "1"}) is not None or not _core_built()


def test_load_follows_the_switch_in_process() -> None:
    assert native_core.load({_compiled.INTERPRETED_ENV: "1"}) is None
    if _core_built():
        assert native_core.load({}) is sys.modules[native_core.MODULE]


def test_a_build_older_than_the_crate_is_stale(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    source = tmp_path / "native" / "src" / "codecs" / "request.rs"
    source.parent.mkdir(parents=True)
    source.write_text("")
    built = tmp_path / "oncelog" / "_native.so"
    built.parent.mkdir()
    built.write_bytes(b"")
    os.utime(source, (2_000_000, 2_000_000))
    os.utime(built, (1_000_000, 1_000_000))
    monkeypatch.setattr(native_core, "_CHECKOUT", tmp_path)
    assert native_core.is_stale(built)  # a file in a subdirectory of src/ counts too
    os.utime(built, (3_000_000, 3_000_000))  # rebuilt since the edit
    assert not native_core.is_stale(built)
    (tmp_path / "native" / "Cargo.toml").write_text("")  # the manifest, edited just now
    assert native_core.is_stale(built)
    (tmp_path / ".git").rmdir()  # an installed package: no checkout, never stale
    assert not native_core.is_stale(built)


def test_make_rebuilds_when_any_file_of_the_crate_changes() -> None:
    make = shutil.which("make")
    if make is None:
        pytest.skip("no make here")
    # make's own database: the stamp's prerequisites as make expands them.
    database = subprocess.run(
        [make, "-pq", "-C", str(ROOT), "VENV=.venv", ".venv/.compiled-stamp"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    ).stdout
    rules = [line for line in database.splitlines() if line.startswith(".venv/.compiled-stamp:")]
    assert rules, "no rule for .venv/.compiled-stamp in the Makefile"
    prerequisites = set(rules[0].split(":", 1)[1].split())
    crate = {p.relative_to(ROOT).as_posix() for p in native_core.crate_sources(ROOT)}
    assert crate <= prerequisites, f"not rebuilt on an edit: {sorted(crate - prerequisites)}"


def test_a_build_without_cargo_fails_and_names_the_switch(tmp_path: Path) -> None:
    # No cargo on PATH nor where rustup puts it: stopped before mypyc starts, never skipped.
    nowhere = {"PATH": str(tmp_path), "CARGO_HOME": str(tmp_path / "no-cargo")}
    command = [sys.executable, "setup.py", "-q", "build_ext", "--inplace"]
    environ = {k: v for k, v in os.environ.items() if k != _compiled.INTERPRETED_ENV}
    failed = subprocess.run(
        command,
        env=environ | nowhere,
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert failed.returncode != 0
    assert "needs cargo" in failed.stderr
    assert f"{_compiled.INTERPRETED_ENV}=1" in failed.stderr
    # The switch builds nothing, so it needs neither cargo nor a C compiler.
    interpreted = environ | nowhere | {_compiled.INTERPRETED_ENV: "1"}
    subprocess.run(command, env=interpreted, cwd=ROOT, check=True, capture_output=True, timeout=60)
