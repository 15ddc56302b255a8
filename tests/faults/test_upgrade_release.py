"""The upgrade drill finds the previous release by its tag, else by its commit."""

from __future__ import annotations

import subprocess

import pytest

from drills.upgrade.release import PREVIOUS_COMMIT, PREVIOUS_TAG, REPO, ReleaseError, resolve


def _has(rev: str) -> bool:
    args = ["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"]
    return subprocess.run(args, capture_output=True, check=False).returncode == 0


def test_the_tag_names_the_previous_release_when_the_clone_has_it() -> None:
    if not _has(PREVIOUS_TAG):
        pytest.skip(f"this clone has no tag {PREVIOUS_TAG}")
    assert resolve() == (PREVIOUS_TAG, PREVIOUS_COMMIT)


def test_a_clone_without_the_tag_falls_back_to_the_commit() -> None:
    if not _has(PREVIOUS_COMMIT):
        pytest.skip("a shallow clone without the previous release's commit")
    assert resolve("v-no-such-tag", PREVIOUS_COMMIT) == (PREVIOUS_COMMIT[:12], PREVIOUS_COMMIT)


def test_neither_tag_nor_commit_is_a_drill_error_saying_what_to_fetch() -> None:
    with pytest.raises(ReleaseError, match="git fetch --tags"):
        resolve("v-no-such-tag", "0" * 40)
