"""The TypeScript SDK checks the same documented ranges and nesting limit as Python's.

Its own ``node --test`` suite (sdk/typescript/test/limits.test.ts) shows each refused
before anything is sent; this compares its constants with
:mod:`oncelog.identity.validation`'s, so that the two SDKs cannot drift apart.
"""

from __future__ import annotations

import json

from oncelog.identity import validation
from tests.served import SDK, build, require_node, run

PRINT = """
import * as limits from "./dist/src/limits.js";
console.log(JSON.stringify(limits));
"""


def test_the_typescript_limits_are_pythons() -> None:
    node, _ = require_node()
    build(SDK)
    limits = json.loads(run([node, "--input-type=module", "-e", PRINT], SDK))
    assert limits == {
        "MIN_LEASE_S": validation.MIN_LEASE_MS / 1000,
        "MAX_LEASE_S": validation.MAX_LEASE_MS / 1000,
        "MIN_RETENTION_S": 1 / 1000,
        "MAX_RETENTION_S": validation.MAX_RETENTION_MS / 1000,
        "MAX_STEP": validation.MAX_STEP,
        "MAX_JSON_DEPTH": validation.MAX_JSON_DEPTH,
        "MAX_ATTEMPT_TIMEOUT_MS": 300_000,
        "MAX_ATTEMPTS": 100,
    }


def test_the_typescript_limits_suite_passes() -> None:
    node, _ = require_node()
    build(SDK)
    output = run([node, "--test", "dist/test/limits.test.js"], SDK)
    assert "# fail 0" in output, output
    assert "# pass 3" in output, output
