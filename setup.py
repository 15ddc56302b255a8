"""The compiled core: mypyc compiles the hot modules' own source into C extensions.

The fold, the token fingerprints and the generated request reader are plain typed
Python; a wheel or ``pip install .`` carries them compiled, from the same files,
so the projector, the rebuild, ``InMemoryLedger`` and the SDK all run one judge.
An editable install (``make venv``) keeps them interpreted, so that an edit to
the source takes effect without a rebuild; ``ONCELOG_PURE=1`` does the same for
any build (a machine without a C compiler).
"""

from __future__ import annotations

import os
import sys

from setuptools import setup

COMPILED = [
    "oncelog/referee/fold.py",
    "oncelog/identity/tokens.py",
    "oncelog/schemas/request_reader.py",
]

# The commands that build extensions; metadata and editable builds need none.
_BUILDS = {"bdist_wheel", "build", "build_ext", "install"}


def _ext_modules() -> list[object]:
    if os.environ.get("ONCELOG_PURE") == "1" or not _BUILDS & set(sys.argv):
        return []
    from mypyc.build import mypycify

    # The project's mypy configuration names plugins the build environment lacks;
    # the modules are checked under it by `make lint`, here they are only compiled.
    flags = ["--config-file=", "--ignore-missing-imports"]
    return list(mypycify([*flags, *COMPILED], opt_level="3"))


setup(ext_modules=_ext_modules())
