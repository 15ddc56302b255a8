"""The TypeScript SDK installs as docs/typescript-sdk.md says: its npm tarball (what
``make sdk-ts`` packs) goes into a fresh project in a temporary folder, and a script there
imports ``@oncelog/sdk`` by name and runs a tool against a real ``serve``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.served import SDK, Served, build, require_node, run

pytestmark = pytest.mark.kafka

SCRIPT = Path(__file__).with_name("installed_sdk.mjs")


def _tarball(into: Path) -> Path:
    """``make sdk-ts``'s steps (npm ci, tsc, npm pack), the build under the suite's lock."""
    _, npm = require_node()
    build(SDK)
    run([npm, "pack", "--pack-destination", str(into)], SDK)
    (tarball,) = into.glob("oncelog-sdk-*.tgz")
    return tarball


def test_the_packed_sdk_installs_into_a_fresh_project_and_runs_a_tool(
    served: Served, tmp_path: Path
) -> None:
    node, npm = require_node()
    tarball = _tarball(tmp_path)
    project = tmp_path / "app"
    project.mkdir()
    run([npm, "init", "-y"], project)
    run([npm, "pkg", "set", "type=module"], project)
    run([npm, "install", "--no-audit", "--no-fund", str(tarball)], project)
    assert (project / "node_modules" / "@oncelog" / "sdk" / "package.json").is_file()
    (project / "main.js").write_text(SCRIPT.read_text())
    env = {**served.node_env(), "DEAD_URL": "http://127.0.0.1:9"}
    (line,) = run([node, "main.js"], project, env).strip().splitlines()[-1:]
    assert json.loads(line) == {
        "statuses": ["claimed", "replayed"],
        "calls": 1,
        "errors": {
            "missing": [True, "invalid_configuration"],
            "dead": [True, "serve_unreachable", True],
        },
        "url": True,
    }
