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

from setuptools import setup

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
    return list(mypycify([*flags, *paths], opt_level="3", group_name="oncelog._core"))


setup(ext_modules=_ext_modules())
