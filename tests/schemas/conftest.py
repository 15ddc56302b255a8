"""Fixtures of the schema tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from oncelog.native_core import NATIVE
from oncelog.schemas import codec, previous, record_writers
from oncelog.schemas.fast_paths import FastPath
from oncelog.schemas.native_writer import python_written


def reader_paths(python: FastPath, fast: FastPath) -> list[object]:
    """The generated Python readers' path and, where the extension is built, its readers'
    (the codec's ``fast``), as parameters of a test that checks both."""
    paths: list[object] = [pytest.param(python, id="python")]
    if fast is not python:
        paths.append(pytest.param(fast, id="native"))
    return paths


@pytest.fixture(scope="module")
def current_layout() -> Iterator[None]:
    """Every record written in the current layout, for the tests of its generated codecs.

    Without approvals a record is written in the previous release's layout
    (:mod:`oncelog.schemas.previous`); those tests check the current one.
    """
    with pytest.MonkeyPatch.context() as patch:
        for name in ("request_fits", "decision_fits", "snapshot_fits", "state_fits"):
            patch.setattr(previous, name, lambda _record: False)
        yield


def same_types(a: Any, b: Any, path: str = "model") -> None:
    """Assert that ``a`` and ``b`` have the same type all the way down (NamedTuples compare
    equal to any tuple of their items; a reader must build the models' own classes)."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} against {type(b).__name__}"
    if isinstance(a, tuple):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same_types(x, y, f"{path}[{i}]")
    elif dataclasses.is_dataclass(a):
        for field in dataclasses.fields(a):
            same_types(getattr(a, field.name), getattr(b, field.name), f"{path}.{field.name}")


# The codec's writers, and the generated Python writer each falls back to (with its header).
_PYTHON_WRITERS: dict[str, tuple[bytes, Any]] = {
    "_WRITE_REQUEST": (codec._FAST_HEADER, record_writers.request),
    "_WRITE_PREV_REQUEST": (codec._PREV_REQUEST_HEADER, record_writers.previous_request),
    "_WRITE_SNAPSHOT": (codec._SNAPSHOT_HEADER, record_writers.snapshot),
    "_WRITE_DECISION": (codec._DECISION_HEADER, record_writers.decision),
    "_WRITE_PREV_SNAPSHOT": (codec._PREV_SNAPSHOT_HEADER, record_writers.previous_snapshot),
    "_WRITE_PREV_DECISION": (codec._PREV_DECISION_HEADER, record_writers.previous_decision),
    "_WRITE_STATE_BODY": (b"", codec._STATE_BODIES.body),
    "_WRITE_STATE_BODY_ONCE": (b"", record_writers.state),
}


@pytest.fixture(scope="module", params=["python", "native"] if NATIVE else ["python"])
def writers(request: pytest.FixtureRequest) -> Iterator[str]:
    """The codec writing with the generated Python writers, then (where the extension is
    built) with the extension's: a module's tests run once with each."""
    with pytest.MonkeyPatch.context() as patch:
        if request.param == "python":
            for name, (prefix, write) in _PYTHON_WRITERS.items():
                patch.setattr(codec, name, python_written(prefix, write))
        yield request.param
