"""The compiled core: mypyc compiles the hot modules' own source into C extensions,
and cargo builds the Rust extension ``oncelog._native`` from ``native/``.

The modules (``oncelog._compiled.COMPILED``) are plain typed Python; a wheel,
``pip install .`` and ``make venv`` (in place) carry them compiled from the same
files. The Rust extension holds the fold, the one judge of the projector, the rebuild,
``InMemoryLedger`` and the SDK (``oncelog.native_core`` loads it): every build makes it.
``ONCELOG_INTERPRETED=1`` builds it alone, without the mypyc core.
"""

from __future__ import annotations

import json
import os
import runpy
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import ExecError

# Standard library only, and read before the package's dependencies are installed.
_CORE = runpy.run_path(os.path.join("oncelog", "_compiled.py"))

# The commands that build extensions; metadata and editable builds need none.
_BUILDS = {"bdist_wheel", "build", "build_ext", "install"}

# The Rust extension: its crate, and the module its library is imported as.
_NATIVE_MANIFEST = os.path.join("native", "Cargo.toml")
_NATIVE_MODULE = "oncelog._native"


def _ext_modules() -> list[object]:
    if not _BUILDS & set(sys.argv):
        return []
    # Before mypyc's minute of work: a build that cannot make the Rust extension stops now.
    _cargo()
    # Built by cargo, not from C sources (CoreBuildExt): listed so every build runs it and a
    # wheel is tagged for its platform.
    native = Extension(_NATIVE_MODULE, sources=[])
    if os.environ.get(_CORE["INTERPRETED_ENV"]) == "1":
        return [native]
    from mypyc.build import mypycify  # noqa: PLC0415 (only a build has mypyc)

    paths = [name.replace(".", "/") + ".py" for name in _CORE["COMPILED"]]
    # The project's mypy configuration names plugins the build environment lacks;
    # the modules are checked under it by `make lint`, here they are only compiled.
    flags = ["--config-file=", "--ignore-missing-imports"]
    # The modules' shared runtime inside the package, where an editable install finds it too.
    # One C file per module: the compiler then takes them on every core (see ParallelBuildExt).
    extensions = list(
        mypycify([*flags, *paths], opt_level="3", group_name="oncelog._core", multi_file=True)
    )
    # mypyc writes the per-module files to build/ and the group's headers to build/oncelog/.
    for extension in extensions:
        extension.include_dirs.append(os.path.join("build", "oncelog"))
    return [native, *extensions]


class ParallelBuildExt(build_ext):
    """``build_ext`` that compiles an extension's C files side by side, one per core.

    setuptools compiles them one after another; the modules' shared library is most of
    the build's time, in one C file per module.
    """

    def build_extensions(self) -> None:
        compile_some: Callable[..., list[str]] = self.compiler.compile

        # The cores this process may run on, as `nproc` counts them (not the host's).
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()

        def compile_all(sources: list[str], *args: Any, **kwargs: Any) -> list[str]:
            with ThreadPoolExecutor(cores or 1) as pool:
                done = pool.map(lambda source: compile_some([source], *args, **kwargs), sources)
                return [obj for objects in done for obj in objects]

        self.compiler.compile = compile_all  # type: ignore[method-assign]
        super().build_extensions()


def _cargo() -> str:
    """Rust's cargo: on PATH, else where rustup installs it (not on PATH in a fresh shell).

    Without it the build fails: the extension holds the fold, and the package has no other.
    """
    found = shutil.which("cargo")
    if found:
        return found
    installed = Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo") / "bin" / "cargo"
    if os.access(installed, os.X_OK):
        return str(installed)
    raise SystemExit(
        f"error: building oncelog's Rust extension ({_NATIVE_MANIFEST}) needs cargo, found "
        f"neither on PATH nor at {installed}: install Rust with rustup (https://rustup.rs); "
        "the extension holds oncelog's fold, so no build goes without it"
    )


def _cargo_build() -> Path:
    """Build the crate with ``cargo build --release --locked``; the library it made.

    The library's path comes from cargo's own report, whatever the platform's file name
    for it or the target directory (``native/target`` unless CARGO_TARGET_DIR says).
    """
    command = [_cargo(), "build", "--release", "--locked", "--manifest-path", _NATIVE_MANIFEST]
    # pyo3 builds for the interpreter PYO3_PYTHON names: this one, not a python3 on PATH.
    env = os.environ | {"PYO3_PYTHON": sys.executable}
    print(" ".join(command), flush=True)
    report = subprocess.run(
        [*command, "--message-format=json-render-diagnostics"],  # errors still on stderr
        env=env,
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    if report.returncode != 0:
        raise ExecError(f"{' '.join(command)} failed (cargo's errors above)")
    for line in report.stdout.splitlines():
        message = json.loads(line)
        if message.get("reason") == "compiler-artifact" and "cdylib" in message["target"]["kind"]:
            return Path(message["filenames"][0])
    raise ExecError(f"{' '.join(command)} reported no library built")


class CoreBuildExt(ParallelBuildExt):
    """The compiled core's ``build_ext``: the Rust extension with cargo, mypyc's with C."""

    def build_extension(self, ext: Any) -> None:
        if ext.name == _NATIVE_MODULE:
            self._build_native()
        else:
            super().build_extension(ext)

    def _build_native(self) -> None:
        """The crate's library as ``oncelog/_native<EXT_SUFFIX>`` in build_lib."""
        destination = self.get_ext_fullpath(_NATIVE_MODULE)
        os.makedirs(os.path.dirname(destination), exist_ok=True)
        _replace(_cargo_build(), destination)

    def copy_file(self, infile: Any, outfile: Any, *args: Any, **kwargs: Any) -> tuple[str, bool]:
        """How ``--inplace`` puts each built extension beside its source: :func:`_replace`."""
        _replace(Path(infile), str(outfile))
        return str(outfile), True


def _replace(built: Path, destination: str) -> None:
    """``built`` copied to ``destination``, then renamed over the old file: a process that has
    the old library loaded keeps its mapping intact (a copy into the file itself would change
    the pages under it), and the new file's time is the build's."""
    partial = destination + ".partial"
    shutil.copyfile(built, partial)
    os.replace(partial, destination)


setup(ext_modules=_ext_modules(), cmdclass={"build_ext": CoreBuildExt})
