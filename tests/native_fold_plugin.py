"""The suites against the Rust fold: ``python -m pytest -p tests.native_fold_plugin ...``.

Loaded before the test modules, it replaces ``oncelog.referee.fold.fold`` and every
module-level binding of it (any loaded module's attribute that is the Python fold:
``oncelog.referee.judge``, the test helpers, ``bench``) with a counting wrapper around
``oncelog._native.fold``; a module imported later reads the replaced attribute. Again
after collection, for whatever the conftests and test modules bound meanwhile.

A module that mypyc compiled calls the fold it was compiled with, whatever its attribute
says: ``oncelog.referee.judge`` (through which the projector, the rebuild and the
in-memory ledger fold) is one. So the plugin refuses to run with a compiled judge: run
with ``ONCELOG_INTERPRETED=1``, which imports every compiled module from its source.

The package's wiring is untouched. At the end it reports how many folds the Rust fold
judged, and how many the Python rules still judged (counted by their ``decide``, which
every Python verdict calls); the session fails if the Rust fold was never called or the
Python rules were called at all.
"""

from __future__ import annotations

import importlib
import sys
from collections import Counter
from typing import Any

import pytest

import oncelog.referee.approvals as approvals_module
import oncelog.referee.fold as fold_module
import oncelog.referee.inherits as inherits_module
import oncelog.referee.judge as judge_module
import oncelog.referee.verdicts as verdicts_module
from oncelog.identity.tokens import TOKEN_FP_HEX

# Not through oncelog.native_core: ONCELOG_INTERPRETED=1 hides the extension there.
native: Any = importlib.import_module("oncelog._native")

PYTHON_FOLD = fold_module.fold
RUST_FOLD = native.fold
PYTHON_DECIDE = verdicts_module.decide
CALLS: Counter[str] = Counter()  # "rust": folds by the Rust fold; "python": Python verdicts
REBOUND: set[str] = set()


def fold(*args: Any, **kwargs: Any) -> Any:
    """The Rust fold, counted."""
    CALLS["rust"] += 1
    return RUST_FOLD(*args, **kwargs)


def _counted_decide(*args: Any, **kwargs: Any) -> Any:
    CALLS["python"] += 1
    return PYTHON_DECIDE(*args, **kwargs)


def _compiled(module: Any) -> bool:
    return not str(getattr(module, "__file__", "")).endswith(".py")


def _rebind() -> None:
    """Every loaded module's attribute that is the Python fold becomes the Rust one."""
    for name, module in list(sys.modules.items()):
        if name == __name__:
            continue
        try:
            names = [k for k, v in vars(module).items() if v is PYTHON_FOLD]
        except TypeError:  # no __dict__
            continue
        for attr in names:
            setattr(module, attr, fold)
            REBOUND.add(f"{name}.{attr}")


def pytest_configure(config: pytest.Config) -> None:
    if _compiled(judge_module):
        raise pytest.UsageError(
            "tests.native_fold_plugin: oncelog.referee.judge is compiled (mypyc) and calls the "
            "Python fold directly; run with ONCELOG_INTERPRETED=1"
        )
    constants = (native.RETRY_MEMORY_MS, native.PAYLOAD_FP_HEX, native.TOKEN_FP_HEX)
    expected = (verdicts_module.RETRY_MEMORY_MS, verdicts_module.PAYLOAD_FP_HEX, TOKEN_FP_HEX)
    if constants != expected:
        raise pytest.UsageError(f"the Rust fold's constants {constants} are not {expected}")
    # The Python rules, counted: each of their verdicts goes through ``decide``.
    for module in (verdicts_module, fold_module, approvals_module, inherits_module):
        module.decide = _counted_decide  # type: ignore[attr-defined]
    _rebind()


def pytest_collection_finish(session: pytest.Session) -> None:
    _rebind()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if CALLS["rust"] == 0 or CALLS["python"]:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    write = terminalreporter.write_line
    write(f"native fold plugin: {CALLS['rust']:,} folds by the Rust fold (oncelog._native.fold)")
    write(f"native fold plugin: {CALLS['python']:,} verdicts by the Python rules")
    write(f"native fold plugin: rebound {', '.join(sorted(REBOUND))}")
    if CALLS["rust"] == 0:
        write("native fold plugin: FAILED, the Rust fold was never called", red=True)
    if CALLS["python"]:
        write("native fold plugin: FAILED, the Python rules judged some requests", red=True)
