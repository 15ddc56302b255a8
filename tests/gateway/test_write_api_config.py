"""When the write API is on, and with which token: decided before anything connects."""

from __future__ import annotations

import duckdb
import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from oncelog.errors import ConfigError
from oncelog.gateway import open_write_api
from oncelog.query.http import create_app
from oncelog.query.problem import MEDIA_TYPE
from oncelog.settings import Settings


def test_without_the_write_token_the_routes_are_off() -> None:
    assert open_write_api(Settings(bootstrap_servers="unused:1"), "unused:1") is None
    app = create_app(duckdb.connect)
    response = TestClient(app).post("/v1/claims", json={})
    assert (response.status_code, response.json()["code"]) == (405, "method_not_allowed")
    assert response.headers["content-type"] == MEDIA_TYPE
    assert "/v1/claims" not in TestClient(app).get("/openapi.json").json()["paths"]


def test_the_write_token_must_not_be_the_read_token() -> None:
    same = SecretStr("one-token-for-both")
    settings = Settings(bootstrap_servers="unused:1", http_token=same, http_write_token=same)
    with pytest.raises(ConfigError, match="a token of its own"):
        open_write_api(settings, "unused:1")


@pytest.mark.parametrize("field", ["http_write_token", "http_claim_key"])
def test_an_empty_or_short_secret_is_refused(field: str) -> None:
    with pytest.raises(ValueError, match=f"ONCELOG_{field.upper()}"):
        Settings.model_validate({field: SecretStr("")})
