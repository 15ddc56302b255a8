"""One client of the read API: its paths are the route table's, its errors decoded by code."""

from __future__ import annotations

import json

import pytest

from oncelog.errors import (
    CheckpointsRedactedError,
    InvalidArgumentError,
    LedgerError,
    LedgerTimeoutError,
    NoOwnerError,
    NotFoundError,
    OwnerUnavailableError,
    ServeUnreachableError,
    StoreError,
    UnauthorizedError,
)
from oncelog.query.api import ROUTES
from oncelog.query.problem import problem
from oncelog.schemas import read_api


def test_the_route_table_serves_the_paths_the_clients_fill() -> None:
    names = vars(read_api).items()
    paths = {v for k, v in names if k.isupper() and isinstance(v, str) and v.startswith("/")}
    assert sorted(route.path for route in ROUTES) == sorted(paths - {read_api.EXPORT})


def test_a_path_quotes_each_value_as_one_segment() -> None:
    path = read_api.path(read_api.STATUS, channel_id="a/b c", step_or_key="step-1?x")
    assert path == "/v1/status/a%2Fb%20c/step-1%3Fx"


def _answer(status: int, code: str, message: str = "why") -> LedgerError:
    body = bytes(problem(status, code, message).body)  # the server's own error answer
    return read_api.error_of(status, body, "GET http://serve/v1/x")


@pytest.mark.parametrize(
    ("status", "code", "kind"),
    [
        (400, "invalid_argument", InvalidArgumentError),
        (401, "unauthorized", UnauthorizedError),
        (403, "checkpoints_redacted", CheckpointsRedactedError),
        (404, "not_found", NotFoundError),
        (503, "no_owner", NoOwnerError),
        (503, "owner_unavailable", OwnerUnavailableError),
        (503, "store_error", StoreError),
        (504, "timeout", LedgerTimeoutError),
    ],
)
def test_an_error_answer_raises_the_class_of_its_code(
    status: int, code: str, kind: type[LedgerError]
) -> None:
    error = _answer(status, code)
    assert type(error) is kind
    assert error.code == code
    assert error.message.startswith(f"GET http://serve/v1/x answered HTTP {status}: why")


def test_an_unknown_code_or_no_code_falls_back_on_the_status() -> None:
    newer = _answer(503, "some_newer_code")
    assert type(newer) is ServeUnreachableError
    assert "(code some_newer_code)" in newer.message
    proxy = read_api.error_of(502, b"<html>Bad Gateway</html>", "GET u")
    assert type(proxy) is LedgerError
    assert "Bad Gateway" in proxy.message
    assert type(read_api.error_of(404, b"", "GET u")) is NotFoundError


def test_a_code_whose_class_needs_more_than_a_message_keeps_its_code_in_the_text() -> None:
    error = read_api.error_of(409, json.dumps({"code": "conflict", "message": "m"}).encode(), "u")
    assert isinstance(error, LedgerError)
    assert "(code conflict)" in error.message


def test_a_refused_token_says_which_setting_to_set() -> None:
    assert "ONCELOG_HTTP_TOKEN" in _answer(401, "unauthorized").message
