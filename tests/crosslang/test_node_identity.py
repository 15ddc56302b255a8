"""Node.js re-derives every identity vector: identity is not a Python implementation detail.

Without ``node`` on the PATH the tests skip, unless ``ONCELOG_REQUIRE_NODE`` is set
(``.ci/run`` sets it), where they fail instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SCRIPT = HERE / "identity.mjs"
VECTORS = HERE.parent / "vectors" / "identity.json"
NODE = shutil.which("node")


@pytest.fixture(autouse=True)
def _node_present() -> None:
    if NODE is None:
        why = "node is not on PATH (apt-get install nodejs)"
        if os.environ.get("ONCELOG_REQUIRE_NODE"):
            pytest.fail(f"ONCELOG_REQUIRE_NODE is set: {why}")
        pytest.skip(why)


def _node(vectors: Path) -> subprocess.CompletedProcess[str]:
    assert NODE is not None
    return subprocess.run(
        [NODE, str(SCRIPT), str(vectors)], capture_output=True, text=True, timeout=60, check=False
    )


def test_node_re_derives_every_identity_vector() -> None:
    count = len(json.loads(VECTORS.read_text("utf-8")))
    done = _node(VECTORS)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == f"ok {count} vectors"


FIELDS = ["canonical_params", "request_hash", "operation_id", "idempotency_key"]


@pytest.mark.parametrize("field", FIELDS)
def test_node_reports_a_vector_it_does_not_re_derive(field: str, tmp_path: Path) -> None:
    vectors = json.loads(VECTORS.read_text("utf-8"))
    vectors[0][field] = vectors[0][field][:-1] + ("0" if vectors[0][field][-1] != "0" else "1")
    tampered = tmp_path / "identity.json"
    tampered.write_text(json.dumps(vectors, ensure_ascii=False), "utf-8")
    done = _node(tampered)
    assert done.returncode == 1
    assert f"MISMATCH charge:order-4471 {field}" in done.stdout
