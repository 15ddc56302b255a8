"""Transport errors of httpx, requests and aiohttp are retryable by default; others are not."""

from __future__ import annotations

import subprocess
import sys
import types

import httpx
import pytest
import requests

from oncelog.producer.tool_model import DEFAULT_RETRY_ON, ToolSpec
from oncelog.producer.tool_plan import failure_of
from oncelog.producer.transient import TransientTransportError, is_transient

REQUEST = httpx.Request("POST", "http://127.0.0.1:9/charge")

TRANSIENT = [
    httpx.ConnectError("connection refused", request=REQUEST),
    httpx.ReadError("connection reset by peer", request=REQUEST),
    httpx.ConnectTimeout("timed out", request=REQUEST),
    httpx.ReadTimeout("timed out", request=REQUEST),
    httpx.RemoteProtocolError("server disconnected without sending a response", request=REQUEST),
    requests.exceptions.ConnectionError("connection refused"),
    requests.exceptions.ConnectTimeout("timed out"),
    requests.exceptions.ReadTimeout("timed out"),
    requests.exceptions.ChunkedEncodingError("connection broken"),
    ConnectionResetError("reset"),
    TimeoutError("timed out"),
]
PERMANENT = [
    httpx.HTTPStatusError("402", request=REQUEST, response=httpx.Response(402, request=REQUEST)),
    httpx.UnsupportedProtocol("ftp://", request=REQUEST),
    requests.exceptions.SSLError("certificate verify failed"),
    requests.exceptions.HTTPError("402 Payment Required"),
    ValueError("card declined"),
]


@pytest.mark.parametrize("exc", TRANSIENT, ids=lambda e: type(e).__name__)
def test_a_transport_error_is_recorded_as_retryable(exc: Exception) -> None:
    assert isinstance(exc, DEFAULT_RETRY_ON)
    assert failure_of(ToolSpec("charge"), exc)[1] is True


@pytest.mark.parametrize("exc", PERMANENT, ids=lambda e: type(e).__name__)
def test_other_errors_are_not(exc: Exception) -> None:
    assert not isinstance(exc, DEFAULT_RETRY_ON)
    assert failure_of(ToolSpec("charge"), exc)[1] is False


def test_aiohttp_errors_are_recognised_by_name_once_aiohttp_is_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # aiohttp is not a dependency: a stand-in module with its class tree shows the lookup.
    aiohttp = types.ModuleType("aiohttp")
    connection = type("ClientConnectionError", (Exception,), {})
    ssl = type("ClientSSLError", (connection,), {})
    disconnected = type("ServerDisconnectedError", (connection,), {})
    aiohttp.ClientConnectionError = connection  # type: ignore[attr-defined]
    aiohttp.ClientSSLError = ssl  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "aiohttp", aiohttp)
    assert isinstance(disconnected("server disconnected"), TransientTransportError)
    assert issubclass(disconnected, TransientTransportError)
    assert not isinstance(ssl("certificate"), TransientTransportError)
    monkeypatch.delitem(sys.modules, "aiohttp")
    assert not is_transient(disconnected("no aiohttp loaded, so not one of its errors"))


def test_the_check_imports_none_of_the_clients() -> None:
    probe = (
        "import sys; from oncelog.producer.transient import is_transient; "
        "is_transient(ConnectionError()); "
        "print(sorted(m for m in ('aiohttp', 'requests') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
