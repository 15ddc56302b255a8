"""One composition of the HTTP app: one ordered middleware list, one bearer check by realm."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

import oncelog
from oncelog.query.guard import Access, Guard
from oncelog.query.http import Routing, create_app
from oncelog.query.owners import OwnerView
from oncelog.query.routing import QueryRouter
from tests.query.query_factories import Owners

PACKAGE = Path(oncelog.__file__).parent
READ = SecretStr("read-token-of-the-test")
WRITE = SecretStr("write-token-of-the-test")


def _modules_adding_middleware() -> list[str]:
    pattern = re.compile(r"\.middleware\(|add_middleware\(")
    return sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if pattern.search(path.read_text(encoding="utf-8"))
    )


def test_no_module_adds_middleware_beside_the_apps_one_list() -> None:
    assert _modules_adding_middleware() == []


def test_the_app_has_one_guard_and_nothing_else_without_a_group() -> None:
    app = create_app(duckdb.connect().cursor, token=READ)
    assert [getattr(m.cls, "__name__", None) for m in app.user_middleware] == ["Guard"]


def _access(writes: bool = True) -> Access:
    owns = (lambda path: path.startswith("/v1/claims")) if writes else None
    return Access(read_token=READ, write_token=WRITE if writes else None, writes=owns)


@pytest.mark.parametrize(
    ("path", "realm"),
    [
        ("/healthz", "open"),
        ("/openapi.json", "open"),
        ("/v1/claims", "write"),
        ("/ui", "ui"),
        ("/ui/runs/x", "ui"),
        ("/uix", "read"),
        ("/v1/status/c/1", "read"),
        ("/metrics", "read"),
        ("/anything/added/later", "read"),
    ],
)
def test_every_path_has_one_realm(path: str, realm: str) -> None:
    assert _access().realm(path) == realm


def test_without_a_write_api_its_paths_are_read_paths() -> None:
    assert _access(writes=False).realm("/v1/claims") == "read"


def _client(read: SecretStr | None) -> TestClient:
    return TestClient(create_app(duckdb.connect().cursor, token=read))


@pytest.mark.parametrize(
    ("method", "path", "headers", "status"),
    [
        ("GET", "/v1/positions", {}, 401),
        ("GET", "/v1/positions", {"Authorization": "Bearer wrong"}, 401),
        ("POST", "/v1/positions", {}, 401),  # the token first, then the method
        ("POST", "/v1/positions", {"Authorization": f"Bearer {READ.get_secret_value()}"}, 405),
        ("POST", "/healthz", {}, 405),
        ("GET", "/ui/", {}, 303),
        ("POST", "/ui/", {}, 405),
    ],
)
def test_the_guard_answers_by_realm_then_method(
    method: str, path: str, headers: dict[str, str], status: int
) -> None:
    with _client(READ) as http:
        response = http.request(method, path, headers=headers, follow_redirects=False)
    assert response.status_code == status, response.text


def test_the_routing_of_a_group_runs_after_the_guard() -> None:
    owners = Owners(OwnerView(1))
    router = QueryRouter(owners, "projector-0", token=READ, timeout_s=0.5)
    app = create_app(duckdb.connect().cursor, token=READ, router=router)
    names = [getattr(m.cls, "__name__", None) for m in app.user_middleware]
    assert names == [Guard.__name__, Routing.__name__]
