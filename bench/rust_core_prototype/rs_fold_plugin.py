"""pytest -p rs_fold_plugin: the referee's tests against the Rust fold (Python for the rest)."""

import importlib
from typing import Any

import oncelog.referee.fold as fold_module

rs: Any = importlib.import_module("_oncelog_proto")
fold_module.fold = rs.fold


def pytest_terminal_summary(terminalreporter: Any) -> None:
    calls = "(reads, handed to Python, folds, handed to Python)"
    terminalreporter.write_line(f"rust prototype {calls}: {rs.stats()}")
