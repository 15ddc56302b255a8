"""The compiled core: mypyc compiles the hot modules' own source into C extensions.

The modules (``oncelog._compiled.COMPILED``) are plain typed Python; a wheel,
``pip install .`` and ``make venv`` (in place) carry them compiled from the same
files, so the projector, the rebuild, ``InMemoryLedger`` and the SDK all run one
judge. ``ONCELOG_INTERPRETED=1`` builds none (a machine without a C compiler).
"""

from __future__ import annotations

import os
import runpy
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from setuptools import setup
from setuptools.command.build_ext import build_ext

# Standard library only, and read before the package's dependencies are installed.
_CORE = runpy.run_path(os.path.join("oncelog", "_compiled.py"))

# The commands that build extensions; metadata and editable builds need none.
_BUILDS = {"bdist_wheel", "build", "build_ext", "install"}


def _ext_modules() -> list[object]:
    if os.environ.get(_CORE["INTERPRETED_ENV"]) == "1" or not _BUILDS & set(sys.argv):
        return []
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
    return extensions


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


setup(ext_modules=_ext_modules(), cmdclass={"build_ext": ParallelBuildExt})
