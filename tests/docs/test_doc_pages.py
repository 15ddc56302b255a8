"""The documentation's shape: every block checked, every page in the nav, the limits kept."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.docs import shell
from tests.docs.blocks import (
    CHECKED_LANGUAGES,
    OUTPUT_LANGUAGES,
    PAGES,
    ROOT,
    Block,
    all_blocks,
    blocks,
)

BLOCKS = all_blocks()
CHECKED = [b for b in BLOCKS if b.not_run is None and b.lang in ("sh", "yaml", "json", "toml")]
# Blocks exempt from running (<!-- not-run: reason -->): keep them rare.
MAX_NOT_RUN = 3


def test_every_block_has_a_language_the_tests_know() -> None:
    known = CHECKED_LANGUAGES | OUTPUT_LANGUAGES
    unknown = [b.where for b in BLOCKS if b.lang not in known and b.not_run is None]
    # Another language: teach tests/docs to check it, or mark the block not-run with a reason.
    assert unknown == []


def test_exemptions_are_rare_and_say_why() -> None:
    exempt = [b for b in BLOCKS if b.not_run is not None]
    assert len(exempt) <= MAX_NOT_RUN, [b.where for b in exempt]
    assert all(b.not_run for b in exempt), "a not-run marker needs its reason"


@pytest.mark.parametrize("block", CHECKED, ids=[b.where for b in CHECKED])
def test_block_is_valid(block: Block) -> None:
    if block.lang == "sh":
        assert shell.problems(block.code) == []
    elif block.lang == "yaml":
        assert yaml.safe_load(block.code) is not None
    elif block.lang == "json":
        json.loads(block.code)
    else:
        tomllib.loads(block.code)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("oncelog topics create", None),
        ("oncelog status run-42 3 --as-of 12", None),
        ("ONCELOG_PROJECTOR_ID=p1 oncelog serve --db p1.duckdb &", None),
        ('(eval "$(oncelog broker env projector)"; oncelog serve) &', None),
        ("oncelog topics make", "no command 'oncelog topics make'"),
        ("oncelog status run-42", "Missing argument"),
        ("oncelog serve --no-such-flag", "No such option"),
        ('eval "$(oncelog broker nope)"', "no command 'oncelog broker nope'"),
        ("make no-such-target", "no make target"),
        ("python -m no_such_module_here", "no module"),
        ("frobnicate --all", "unknown program"),
    ],
)
def test_the_shell_check_finds_what_is_wrong(line: str, problem: str | None) -> None:
    found = shell.problems(line)
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1
        assert problem in found[0]


def test_not_run_marker_and_nested_fences_are_parsed() -> None:
    page = ROOT / "CONTRIBUTING.md"
    found = blocks(page)
    outer = [b for b in found if b.lang == "markdown"]
    assert len(outer) == 1
    assert "<!-- not-run:" in outer[0].code
    assert "```sh" in outer[0].code


def test_readme_and_performance_stay_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250
    assert len((ROOT / "docs" / "performance.md").read_text().splitlines()) <= 250


def _nav_pages(nav: Any) -> set[str]:
    if isinstance(nav, str):
        return {nav}
    if isinstance(nav, list):
        return set().union(*(_nav_pages(n) for n in nav))
    return set().union(*(_nav_pages(v) for v in nav.values()))


def test_every_page_under_docs_is_in_the_nav() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    nav = _nav_pages(config["nav"])
    on_disk = {str(p.relative_to(ROOT / "docs")) for p in PAGES if p.name != "README.md"}
    assert on_disk - nav == set()
    assert nav - on_disk == set()  # the generated reference pages are committed too


def test_the_repository_has_its_license_changelog_and_contributing() -> None:
    license_text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in license_text
    assert "Version 2.0" in license_text
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pyproject["project"]["license"] == "Apache-2.0"
    assert "## Unreleased" in (ROOT / "CHANGELOG.md").read_text()
    assert "72 characters" in (ROOT / "CONTRIBUTING.md").read_text()


def test_code_cites_the_spec_by_its_path_and_an_existing_section() -> None:
    spec = (ROOT / "docs" / "spec.md").read_text()
    sections = set(re.findall(r"^## (\d+)\.", spec, flags=re.M))
    cited: set[str] = set()
    sources = [(folder, "*.py") for folder in ("oncelog", "tests", "drills", "bench")]
    for folder, pattern in [*sources, ("native/src", "*.rs")]:  # the fold is Rust
        for path in (ROOT / folder).rglob(pattern):
            text = path.read_text("utf-8")
            assert not re.search(r"(?<!docs/)\bspec(\.md)? §", text), f"{path}: say docs/spec.md"
            for group in re.findall(r"docs/spec\.md ((?:§\d+(?:, )?)+)", text):
                cited |= set(re.findall(r"§(\d+)", group))
    assert cited, "nothing cites docs/spec.md"
    assert cited <= sections


def test_a_marked_block_is_not_run_and_bash_is_checked_as_sh(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "<!-- not-run: needs a cloud cluster -->\n```python\nraise SystemExit\n```\n\n"
        "```bash\noncelog topics create\n```\n"
    )
    marked, bash = blocks(page)
    assert (marked.lang, marked.not_run) == ("python", "needs a cloud cluster")
    assert (bash.lang, bash.not_run) == ("sh", None)


def test_the_readme_links_only_to_files_that_exist() -> None:
    """The README is read on the forge too, where the site's generated pages do not exist."""
    text = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\((?!https?://|#)([^)#\s]+)", text)
    assert targets
    assert [t for t in targets if not (ROOT / t).exists()] == []
