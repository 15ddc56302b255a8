"""The write API's values: every bad number, depth or text is a 400 ``invalid_argument``.

schemathesis covers the schema (tests/gateway/test_openapi_conformance.py); these cover
the values the schema lets through, on the real app over a real broker and projector:
numbers past a record's long, nesting past the one depth limit, lone surrogates, and
arbitrary JSON bodies, none of which may reach a 5xx.
"""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import httpx2  # what starlette's TestClient answers with
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oncelog.identity.ids import operation_id
from oncelog.identity.validation import MAX_JSON_DEPTH
from oncelog.query.problem import MEDIA_TYPE
from tests.gateway.conftest import WriteClient

pytestmark = pytest.mark.kafka

CHANNEL = "run-values"
CLAIM = {"channel_id": CHANNEL, "tool_name": "t", "params": {"a": 1}, "worker_id": "w-1"}


def _nested(depth: int, leaf: Any = 1) -> Any:
    """An object ``depth`` levels deep: ``{"a": {"a": ... 1}}``."""
    value = leaf
    for _ in range(depth):
        value = {"a": value}
    return value


def _post(client: WriteClient, path: str, body: str, key: str | None = None) -> httpx2.Response:
    headers = {"content-type": "application/json"}
    if key is not None:
        headers["Idempotency-Key"] = key
    return client.http.post(path, content=body.encode(), headers=headers)


def _refused(response: httpx2.Response, detail: str) -> None:
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == MEDIA_TYPE
    answer = response.json()
    assert answer["code"] == "invalid_argument", answer
    assert detail in answer["detail"], answer


@pytest.mark.parametrize(
    ("field", "raw", "detail"),
    [
        ("retention_seconds", "1e20", "retention_seconds"),
        ("retention_seconds", "1e400", "retention_seconds"),  # json reads inf
        ("retention_seconds", "0.0001", "retention_seconds"),
        ("lease_seconds", "1e400", "lease_seconds"),
        ("lease_seconds", "NaN", "lease_seconds"),
        ("step", str(2**53), "step"),
    ],
)
def test_a_number_out_of_its_range_is_invalid_argument(
    write_api: WriteClient, field: str, raw: str, detail: str
) -> None:
    base = CLAIM if field == "step" else {**CLAIM, "key_name": "k-range"}
    body = json.dumps(base)[:-1] + f', "{field}": {raw}}}'  # raw: as JSON text has it
    _refused(_post(write_api, "/v1/claims", body), detail)


def test_a_heartbeat_lease_out_of_range_is_invalid_argument(write_api: WriteClient) -> None:
    op = operation_id(CHANNEL, "k-beat")
    body = {"channel_id": CHANNEL, "key_name": "k-beat", "claim_token": "t"}
    raw = json.dumps(body)[:-1] + ', "lease_seconds": 1e20}'
    _refused(_post(write_api, f"/v1/executions/{op}/heartbeat", raw), "lease_seconds")


TOO_DEEP = f"params nests objects and arrays more than {MAX_JSON_DEPTH} deep"


@pytest.mark.parametrize(
    ("depth", "detail"),
    [
        (MAX_JSON_DEPTH + 1, TOO_DEEP),
        (300, TOO_DEEP),
        (5000, "error parsing the body"),  # past what the JSON parser itself takes
    ],
)
@pytest.mark.parametrize("key", [None, "deep-key"])
def test_params_nested_past_the_limit_are_invalid_argument(
    write_api: WriteClient, depth: int, detail: str, key: str | None
) -> None:
    # As JSON text: json.dumps itself cannot write 5000 levels.
    params = '{"a":' * (depth - 1) + "{}" + "}" * (depth - 1)
    body = json.dumps({**CLAIM, "key_name": f"k-deep-{depth}"})[:-1] + f', "params": {params}}}'
    idempotency = None if key is None else f"{key}-{depth}"
    response = _post(write_api, "/v1/claims", body, idempotency)
    _refused(response, detail)


def test_params_at_the_limit_are_claimed(write_api: WriteClient) -> None:
    body = {**CLAIM, "key_name": "k-at-limit", "params": _nested(MAX_JSON_DEPTH - 1, {})}
    response = write_api.http.post("/v1/claims", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "claimed"


def test_a_result_nested_past_the_limit_is_invalid_argument(write_api: WriteClient) -> None:
    claimed = write_api.http.post("/v1/claims", json={**CLAIM, "key_name": "k-result"})
    assert claimed.status_code == 200, claimed.text
    op = operation_id(CHANNEL, "k-result")
    body = {
        "channel_id": CHANNEL,
        "key_name": "k-result",
        "claim_token": claimed.json()["claim_token"],
        "result": _nested(300),
    }
    response = write_api.http.post(f"/v1/executions/{op}/complete", json=body)
    _refused(response, f"result nests objects and arrays more than {MAX_JSON_DEPTH} deep")


@pytest.mark.parametrize(
    ("action", "field"), [("fail", "error"), ("cancel", "reason"), ("release", "claim_token")]
)
def test_a_lone_surrogate_is_invalid_argument(
    write_api: WriteClient, action: str, field: str
) -> None:
    op = operation_id(CHANNEL, "k-text")
    body = {"channel_id": CHANNEL, "key_name": "k-text", "claim_token": "t", "error": "e"}
    if action != "fail":
        del body["error"]
    if action == "cancel":
        del body["claim_token"]
    body[field] = "bad \ud800 text"
    response = _post(write_api, f"/v1/executions/{op}/{action}", json.dumps(body))
    _refused(response, f"{field} is not valid Unicode")


# --- arbitrary JSON bodies -------------------------------------------------------------

# The values that broke the write API once (a surrogate, a number past a long, a nesting
# past a serialiser), drawn as often as the arbitrary ones.
_EDGE_TEXT = st.sampled_from(["\ud800", "a\udfffb"])
_EDGE_NUMBERS = st.sampled_from([1e20, -1e20, 2**63, 10**30, float("inf"), float("nan"), 1e-9])
_EDGE_DEPTHS = st.sampled_from([_nested(MAX_JSON_DEPTH + 1), _nested(300), [_nested(299)]])
_EDGES = _EDGE_TEXT | _EDGE_NUMBERS | _EDGE_DEPTHS
_TEXT = (
    _EDGE_TEXT
    | st.text(
        st.characters(max_codepoint=0x2FF) | st.sampled_from(["\ud800", "\udfff", "/", "\x00"]),
        max_size=12,
    )
    | st.sampled_from(["", "..", "12", "step-1", "k", CHANNEL, "found", "pure"])
)
_NUMBERS = (
    _EDGE_NUMBERS
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0, 1, 60, 86_400, 86_401, 2**53])
)
_SCALARS = st.none() | st.booleans() | _NUMBERS | _TEXT
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)
_DEEP = st.integers(min_value=MAX_JSON_DEPTH - 2, max_value=400).map(_nested)
_VALUES = _EDGES | _JSON | _DEEP
_ANY = _EDGES | _VALUES | _NUMBERS | _TEXT


def _one_changed(
    base: dict[str, Any], fields: dict[str, st.SearchStrategy[Any]]
) -> st.SearchStrategy[dict[str, Any]]:
    """``base`` (a valid body) with one field set to a drawn value: each value reaches the
    checks of its own field, which a body wrong everywhere would never pass the first of."""
    names = st.sampled_from(sorted(fields))
    return names.flatmap(lambda name: fields[name].map(lambda value: {**base, name: value}))


_NUMERIC = ("step", "lease_seconds", "retention_seconds")
_CLAIMS = _one_changed(
    {**CLAIM, "key_name": "k-any"},
    {
        **dict.fromkeys(("channel_id", "key_name", "tool_name", "worker_id"), _TEXT | _ANY),
        **dict.fromkeys(("params", "dedup_fields", "effect"), _ANY),
        **dict.fromkeys(_NUMERIC, _NUMBERS | _ANY),
    },
)
_NAMES = _TEXT | _ANY
_WHERE = {"channel_id": CHANNEL, "key_name": "k-any"}
_HELD = {**_WHERE, "claim_token": "t"}
# Each call on an operation: its valid body, and the fields to draw.
_CALL_BODIES: dict[str, tuple[dict[str, Any], dict[str, st.SearchStrategy[Any]]]] = {
    "heartbeat": (_HELD, {"claim_token": _NAMES, "lease_seconds": _NUMBERS | _ANY}),
    "complete": ({**_HELD, "result": 1}, {"result": _EDGE_DEPTHS | _ANY, "reconciled": _ANY}),
    "fail": ({**_HELD, "error": "e"}, {"error": _NAMES, "retryable": _ANY, "reconciled": _ANY}),
    "release": (_HELD, {"claim_token": _NAMES}),
    "cancel": (_WHERE, {"reason": _NAMES}),
}
_CALLS = st.sampled_from(sorted(_CALL_BODIES)).flatmap(
    lambda action: st.tuples(
        st.just(action),
        # Mostly a valid body with one field drawn, which reaches that field's checks.
        st.one_of(
            *[_one_changed(_CALL_BODIES[action][0], _CALL_BODIES[action][1])] * 3,
            _one_changed(_CALL_BODIES[action][0], dict.fromkeys(_WHERE, _NAMES)),
            _VALUES,
        ),
    )
)
# Mostly the operation the bodies name, so that the call's own checks are reached.
_OPERATIONS = st.one_of(
    *[st.just(operation_id(CHANNEL, "k-any"))] * 3, _TEXT.filter(lambda t: t not in ("", ".."))
)


def _no_server_error(response: httpx2.Response) -> None:
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert response.headers["content-type"] == MEDIA_TYPE, response.text
        assert response.json()["code"], response.text


_EXAMPLES = settings(
    max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)


def test_no_claim_body_is_a_server_error(write_api: WriteClient) -> None:
    @given(body=_CLAIMS | _VALUES)
    @_EXAMPLES
    def post(body: Any) -> None:
        _no_server_error(_post(write_api, "/v1/claims", json.dumps(body)))

    post()


def test_no_call_body_is_a_server_error(write_api: WriteClient) -> None:
    @given(call=_CALLS, op=_OPERATIONS)
    @_EXAMPLES
    def post(call: tuple[str, Any], op: str) -> None:
        action, body = call
        # A lone surrogate goes as its raw bytes, as a client may send them.
        quoted = urllib.parse.quote(op, safe="", errors="surrogatepass")
        path = f"/v1/executions/{quoted}/{action}"
        _no_server_error(_post(write_api, path, json.dumps(body)))

    post()
