"""The TypeScript SDK (sdk/typescript) and its Vercel AI SDK example, against a real ledger.

One broker, one ``oncelog serve`` with its write API: the SDK is built with ``tsc
--strict`` and its ``node --test`` suite runs against that server, then the same for the
example package (``ai``'s ``tool()`` with its mock model, offline). Without ``node`` the
tests skip, unless ``ONCELOG_REQUIRE_NODE`` is set (``.ci/run`` sets it).
"""

from __future__ import annotations

import pytest

from tests.served import SDK, Served, build, require_node, run

EXAMPLE = SDK / "examples" / "vercel-ai"

pytestmark = pytest.mark.kafka


def _node_tests(package_dir: str, served: Served) -> str:
    node, _ = require_node()
    package = SDK if package_dir == "sdk" else EXAMPLE
    output = run([node, "--test", "dist/test/"], package, served.node_env())
    assert "# fail 0" in output, output
    assert "# skipped 0" in output, output  # the tests against the server ran
    return output


def test_the_sdk_is_strict_typescript_and_its_suite_passes(served: Served) -> None:
    build(SDK)
    output = _node_tests("sdk", served)
    assert "# pass 0" not in output, output


def test_vercel_ai_tools_replay_on_a_rerun_and_conflict_on_a_change(served: Served) -> None:
    build(SDK)
    build(EXAMPLE)
    _node_tests("example", served)
