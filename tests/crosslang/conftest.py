"""A served ledger for the Node tests of this folder: one ``serve`` per module."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from oncelog.identity.approver_signature import new_private_key, public_key_of
from tests.served import APPROVER_TOKEN, Served, require_node, serving


@pytest.fixture(scope="module")
def served(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A broker's topics of their own and ``serve`` with its write API (no tracer provider),
    and one approver, ``desk``: the intents list its key, its token decides."""
    require_node()
    key = new_private_key()
    public = base64.b64encode(public_key_of(base64.b64decode(key))).decode()
    with serving(
        bootstrap, tmp_path_factory.mktemp("ts"), approvers={"desk": public},
        approver_keys={"desk": key}, http_approver_tokens={"desk": APPROVER_TOKEN},
    ) as served:  # fmt: skip
        yield served
