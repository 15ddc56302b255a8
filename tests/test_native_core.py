"""The Rust extension: the fold, always; the codecs' native path, unless switched off."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from oncelog import _compiled, native_core
from oncelog.errors import NativeCoreError
from tests.probe import probe

ROOT = Path(__file__).resolve().parents[1]

_PROBE = (
    "import sys\n"
    "from oncelog.native_core import NATIVE\n"
    "print(NATIVE is not None and NATIVE is sys.modules['oncelog._native'])\n"
    "from oncelog.schemas import codec\n"
    "print(getattr(codec._FAST_REQUESTS.read_current, '__self__', codec).__class__.__name__)\n"
    "from oncelog.referee.fold import fold\n"
    "print(fold is sys.modules['oncelog._native'].fold)\n"
)


def _probe(**env: str) -> list[str]:
    """What a fresh interpreter says under ``env`` (:func:`tests.probe.probe`): [``NATIVE``
    is the extension, the class reading the codec's requests, the fold is the extension's]."""
    return probe(_PROBE, **env)


def test_a_built_checkout_reads_and_folds_with_the_extension() -> None:
    assert _probe() == ["True", "AvroReader", "True"]


@pytest.mark.parametrize("switch", [{"ONCELOG_INTERPRETED": "1"}, {"ONCELOG_NATIVE": "0"}])
def test_a_switch_turns_off_the_rust_codecs_and_never_the_fold(switch: dict[str, str]) -> None:
    assert _probe(**switch) == ["False", "module", "True"]


def test_load_follows_the_switches_in_process() -> None:
    assert native_core.load({_compiled.INTERPRETED_ENV: "1"}) is None
    assert native_core.load({native_core.NATIVE_ENV: "0"}) is None
    assert native_core.load({native_core.NATIVE_ENV: "1"}) is sys.modules[native_core.MODULE]
    assert native_core.load({}) is sys.modules[native_core.MODULE]


def test_an_install_without_the_extension_says_how_to_build_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(native_core, "MODULE", "oncelog._native_not_built")
    with pytest.raises(NativeCoreError, match="make venv") as raised:
        native_core.require()
    assert raised.value.code == "native_core_unavailable"
    assert isinstance(raised.value, ImportError)  # what an import of a missing module raises
    with pytest.raises(NativeCoreError):  # the switches turn off the codecs, not the fold's need
        native_core.load({})


def test_a_stale_build_is_refused_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A checkout whose crate was edited after the extension this process imported was built.
    (tmp_path / ".git").mkdir()
    source = tmp_path / "native" / "src" / "fold" / "rules.rs"
    source.parent.mkdir(parents=True)
    source.write_text("")
    built = Path(sys.modules[native_core.MODULE].__file__ or "")
    later = built.stat().st_mtime + 60
    os.utime(source, (later, later))
    monkeypatch.setattr(native_core, "_CHECKOUT", tmp_path)
    with pytest.raises(NativeCoreError, match="older than native/"):
        native_core.require()
    os.utime(source, (later - 120, later - 120))  # built after the last edit
    assert native_core.require() is sys.modules[native_core.MODULE]


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


def test_a_build_without_cargo_fails_even_without_the_mypyc_core(tmp_path: Path) -> None:
    # No cargo on PATH nor where rustup puts it: stopped before mypyc starts, never skipped,
    # and ONCELOG_INTERPRETED=1 (no mypyc core) still needs the extension: it is the fold.
    nowhere = {"PATH": str(tmp_path), "CARGO_HOME": str(tmp_path / "no-cargo")}
    command = [sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(tmp_path)]
    environ = {k: v for k, v in os.environ.items() if k != _compiled.INTERPRETED_ENV}
    for switch in ({}, {_compiled.INTERPRETED_ENV: "1"}):
        failed = subprocess.run(
            command,
            env=environ | nowhere | switch,
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert failed.returncode != 0
        assert "needs cargo" in failed.stderr
    assert list(tmp_path.rglob("*.so")) == []


def test_a_build_without_the_mypyc_core_builds_the_extension_alone(tmp_path: Path) -> None:
    if shutil.which("cargo") is None and not (Path.home() / ".cargo" / "bin" / "cargo").exists():
        pytest.fail("cargo is a prerequisite of the build (README)")
    environ = {k: v for k, v in os.environ.items() if k != _compiled.INTERPRETED_ENV}
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(tmp_path)],
        env=environ | {_compiled.INTERPRETED_ENV: "1"},
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=600,
    )
    built = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.so"))
    assert [p.split(".")[0] for p in built] == ["oncelog/_native"]


def test_what_it_makes_is_left_to_refcounting_not_the_cycle_collector() -> None:
    # Immutable, and holding only objects older than themselves: no cycle to collect, so
    # a projector's cache of states is not walked again by every collection.
    from oncelog.referee.fold import fold  # noqa: PLC0415 - the module under test above
    from oncelog.schemas import codec  # noqa: PLC0415
    from tests.projector.fold_factories import Op  # noqa: PLC0415

    op = Op()
    claimed, granted = fold(None, op.claim("A"), 1_000)
    state, decision = fold(claimed, op.complete("A"), 2_000)
    assert state is not None
    assert state.recent
    assert granted.state is claimed
    made = [claimed, state, decision, state.recent, *state.recent, decision.state]
    assert [gc.is_tracked(obj) for obj in made] == [False] * len(made)
    request = codec.decode_request(codec.encode_request(op.complete("A")))
    read_natively = native_core.NATIVE is not None  # else the Python codecs: CPython's tracking
    assert (gc.is_tracked(request), gc.is_tracked(request.body)) == (not read_natively,) * 2
