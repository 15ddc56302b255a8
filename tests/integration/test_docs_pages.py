"""The code blocks of docs/http-api.md, docs/typescript-sdk.md and the JavaScript ones of
docs/tracing.md run against a live ledger.

One ``oncelog serve`` with its write API: each Python block runs twice (the second run is
the retry a worker makes: it must hold too), each JavaScript block runs in Node against
the built SDK.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.served import ROOT, SDK, Served, build, require_node, run, serving

pytestmark = pytest.mark.kafka

DOCS = ROOT / "docs"


def _blocks(page: str, language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", (DOCS / page).read_text(), flags=re.S)


HTTP_BLOCKS = _blocks("http-api.md", "python")
TS_BLOCKS = _blocks("typescript-sdk.md", "js") + _blocks("tracing.md", "js")


@pytest.fixture(scope="module")
def served(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with serving(bootstrap, tmp_path_factory.mktemp("docs")) as served:
        yield served


def test_the_pages_have_blocks() -> None:
    assert HTTP_BLOCKS
    assert TS_BLOCKS


@pytest.mark.parametrize("block", HTTP_BLOCKS, ids=[f"http-{i}" for i in range(len(HTTP_BLOCKS))])
def test_http_api_block_runs(block: str, served: Served, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in served.node_env().items():
        if name.startswith("ONCELOG_"):
            monkeypatch.setenv(name, value)
    for _ in range(2):
        exec(compile(block, str(DOCS / "http-api.md"), "exec"), {"__name__": "__doc__"})


@pytest.mark.parametrize("block", TS_BLOCKS, ids=[f"ts-{i}" for i in range(len(TS_BLOCKS))])
def test_typescript_sdk_block_runs(block: str, served: Served, tmp_path: Path) -> None:
    node, _ = require_node()
    build(SDK)
    # Inside the package, so that `import ... from "@oncelog/sdk"` resolves to itself.
    script = SDK / "dist" / f"doc-{os.getpid()}-{tmp_path.name}.mjs"
    script.write_text(block)
    try:
        for _ in range(2):
            run([node, str(script)], SDK, served.node_env())
    finally:
        script.unlink()
