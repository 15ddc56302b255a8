"""The TypeScript SDK installs as docs/typescript-sdk.md says: its npm tarball (what
``make sdk-ts`` packs) goes into a fresh project in a temporary folder, and a script there
imports ``@oncelog/sdk`` by name and runs a tool against a real ``serve``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.served import SDK, Served, build, require_node, run

pytestmark = pytest.mark.kafka

# What a new user writes after `npm install`: a tool run twice (the second replays), and
# the two errors a wrong setup meets first.
SCRIPT = """
import { ConfigurationError, LedgerClient, ServeUnreachableError, runTool } from "@oncelog/sdk";

const client = new LedgerClient({ workerId: "installed" });  // ONCELOG_URL, ONCELOG_HTTP_WRITE_TOKEN
let calls = 0;
const args = {
  channelId: `installed-${process.pid}-${Date.now()}`, keyName: "refund:1", toolName: "refund",
  params: { order: 1 }, leaseSeconds: 30, reconcile: async () => null,
  fn: async (ctx) => { calls += 1; return { refund: ctx.idempotencyKey.slice(0, 8) }; },
};
const first = await runTool(client, args);
const again = await runTool(client, args);
const errors = {};
const url = process.env.ONCELOG_URL;
delete process.env.ONCELOG_URL;
try { new LedgerClient(); } catch (e) { errors.missing = [e instanceof ConfigurationError, e.code]; }
const dead = new LedgerClient({ url: process.env.DEAD_URL, attempts: 1 });
try { await dead.getExecution({ channelId: "c", keyName: "k" }); }
catch (e) { errors.dead = [e instanceof ServeUnreachableError, e.code, e.message.includes(process.env.DEAD_URL)]; }
console.log(JSON.stringify({ statuses: [first.status, again.status], calls, errors, url: Boolean(url) }));
"""


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
    (project / "main.js").write_text(SCRIPT)
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
