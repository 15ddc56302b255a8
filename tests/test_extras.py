"""The extras install under the names the docs give, with new pips and old ones alike."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXTRAS: dict[str, list[str]] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
    "optional-dependencies"
]


def _pep685(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _old_pip(name: str) -> str:
    # pkg_resources.safe_extra, what pip before 23.3 compared the asked-for name by,
    # against the Provides-Extra that setuptools writes in PEP 685 form.
    return re.sub("[^A-Za-z0-9.-]+", "_", name).lower()


def test_every_extra_is_declared_in_the_form_both_pips_agree_on() -> None:
    for name in EXTRAS:
        assert name == _pep685(name) == _old_pip(name), name


def test_the_framework_extras_have_their_pep685_names() -> None:
    assert {"openai-agents", "pydantic-ai", "langchain", "mcp"} <= set(EXTRAS)


def test_docs_and_code_name_only_declared_extras_as_declared() -> None:
    # `oncelog[a,b]` anywhere a user or the Makefile reads it, and requires_extra("x").
    sources = [ROOT / "README.md", ROOT / "Makefile", ROOT / "pyproject.toml"]
    sources += sorted((ROOT / "docs").rglob("*.md")) + sorted((ROOT / "oncelog").rglob("*.py"))
    named = []
    for path in sources:
        text = path.read_text()
        for group in re.findall(r"oncelog\[([A-Za-z0-9_,.\- ]+)\]", text):
            named += [(path.name, n.strip()) for n in group.split(",")]
        named += [(path.name, n) for n in re.findall(r'requires_extra\("([^"]+)"\)', text)]
    assert named, "no extra named anywhere: the pattern is wrong"
    for where, name in named:
        assert name in EXTRAS, f"{where} names oncelog[{name}], which pyproject does not declare"
