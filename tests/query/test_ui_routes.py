"""The UI's routes on the API's app, over a DuckDB ledger made by the real fold: pages, auth."""

from __future__ import annotations

import urllib.parse
from collections.abc import Awaitable, Callable, Iterator

import pytest
from fastapi import Request, Response
from fastapi.testclient import TestClient
from pydantic import SecretStr

from oncelog.query.http import create_app
from oncelog.query.ui.login import COOKIE, SESSION_S, Sessions, safe_next
from oncelog.query.ui.pages import run_href
from tests.projector.fold_factories import Op
from tests.projector.store_factories import feed
from tests.query.query_factories import CHANNEL, STEP1, Ledger, claim, commit, complete

TOKEN = "ui-token-for-tests-0123456789"
HOSTILE = "<svg onload=alert(1)>"  # a channel: no "/", which the /v1 paths cannot carry
SCRIPT = "<script>alert(2)</script>"
RUN = run_href(CHANNEL)


@pytest.fixture
def hostile(ledger: Ledger) -> Ledger:
    """A channel, a worker and a result that are markup (all legal in the log)."""
    commit(ledger.store, 1, [
        (claim(HOSTILE, STEP1, "h0", "th", SCRIPT), 9_000),
        (complete(HOSTILE, STEP1, "h1", "th", {"html": SCRIPT}), 9_001),
    ])  # fmt: skip
    return ledger


def _client(ledger: Ledger, **kwargs: object) -> Iterator[TestClient]:
    with TestClient(create_app(ledger.store.cursor, **kwargs)) as client:  # type: ignore[arg-type]
        yield client


@pytest.fixture
def open_ui(hostile: Ledger) -> Iterator[TestClient]:
    yield from _client(hostile)


@pytest.fixture
def guarded(hostile: Ledger) -> Iterator[TestClient]:
    yield from _client(hostile, token=SecretStr(TOKEN))


def test_the_run_page_shows_the_reclaim_and_the_fenced_completion(open_ui: TestClient) -> None:
    response = open_ui.get(RUN)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert "script-src" not in response.headers["content-security-policy"]  # none allowed
    assert "default-src 'none'" in response.headers["content-security-policy"]
    page = response.text
    # step-2's reclaim left w1's outcome unknown ("unknown"), w1's fenced late completion
    # proved its effect, and w2 ran it again without reconciling: one step, a double.
    for kind in ("claim", "unknown", "fenced", "complete"):
        assert f'data-kind="{kind}"' in page, kind
    assert "⚠ 1 proven duplicate effect" in page
    assert "possible duplicate effect(s)" not in page  # counted by step, by its verdict
    assert 'data-effect="external"' in page
    assert 'data-effect="pure"' in page
    assert "charged" in page  # the result, not redacted here
    assert "<script" not in page
    assert "http://" not in page.replace("http://www.w3.org", "")


def test_markup_from_the_log_is_escaped(open_ui: TestClient) -> None:
    response = open_ui.get(run_href(HOSTILE))
    assert response.status_code == 200
    page = response.text
    assert "<script" not in page
    assert "<svg onload" not in page
    assert "&lt;svg onload=alert(1)&gt;" in page  # the channel
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in page  # the worker
    assert "&lt;script&gt;alert(2)&lt;/script&gt;&quot;}" in page  # the result, as JSON
    index = open_ui.get("/ui/").text
    assert "<script" not in index
    assert "<svg onload" not in index
    assert f'href="{urllib.parse.quote(run_href(HOSTILE), safe="/%")}"' in index


def test_redacted_results_stay_off_the_page(hostile: Ledger) -> None:
    for client in _client(hostile, redact_results=True):
        page = client.get(RUN).text
        assert "charged" not in page
        assert "(redacted by the server)" in page


def test_as_of_an_offset_and_a_time(open_ui: TestClient) -> None:
    # Offsets 0-5 of run-42: step-2 reclaimed at 3, fenced at 4, completed at 5.
    before = open_ui.get(RUN, params={"as_of_offset": "3"}).text
    assert 'data-kind="unknown"' in before
    assert 'data-kind="fenced"' not in before
    assert "The run as it stood at offset 3" in before
    assert 'data-key="step-2" data-effect="external" data-status="claimed"' in before
    by_time = open_ui.get(RUN, params={"as_of_time": "1970-01-01T00:00:02.500Z"}).text
    assert 'data-key="step-1"' in by_time
    assert 'data-key="step-2"' not in by_time
    for bad in ({"as_of_offset": "3", "as_of_time": "1970-01-01T00:00:02Z"},
                {"as_of_offset": "-1"}, {"as_of_time": "yesterday"},
                {"as_of_time": "1970-01-01T00:00:02.500"}):  # fmt: skip
        response = open_ui.get(RUN, params=bad)
        assert response.status_code == 400, bad
        assert "invalid argument" in response.text
    # A time without a zone is refused as the CLI and the API refuse it, never guessed.
    naive = open_ui.get(RUN, params={"as_of_time": "1970-01-01T00:00:02.500"}).text
    assert "needs a time zone" in naive


def test_the_index_lists_recent_channels_with_their_counts(open_ui: TestClient) -> None:
    page = open_ui.get("/ui/").text
    rows = page.split("<tr data-channel=")[1:]
    names = [urllib.parse.unquote(r.split('"')[1]) for r in rows]
    assert names == [CHANNEL, "&lt;svg onload=alert(1)&gt;", "run-7"]  # newest first
    run42 = rows[0]
    # 3 steps: 1 claimed (charge), 2 completed; one operation with a double, flagged.
    assert "<td>3</td><td>1</td><td>2</td>" in run42
    assert "⚠ 1 double" in run42
    assert 'data-flagged="true"' in run42
    assert 'data-flagged="false"' in rows[2]
    assert open_ui.get("/ui", follow_redirects=False).headers["location"] == "/ui/"


def test_without_the_token_ui_pages_send_the_browser_to_login(guarded: TestClient) -> None:
    response = guarded.get(RUN + "?as_of_offset=3", follow_redirects=False)
    assert response.status_code == 303
    location = response.headers["location"]
    assert location.startswith("/ui/login?next=")
    assert urllib.parse.parse_qs(location.split("?", 1)[1])["next"] == [RUN + "?as_of_offset=3"]
    assert guarded.get("/ui/", follow_redirects=False).status_code == 303
    form = guarded.get(location)
    assert form.status_code == 200
    assert 'type="password"' in form.text


def test_a_wrong_token_is_refused(guarded: TestClient) -> None:
    response = guarded.post("/ui/login", data={"token": TOKEN + "x", "next": RUN},
                            follow_redirects=False)  # fmt: skip
    assert response.status_code == 401
    assert COOKIE not in response.headers.get("set-cookie", "")
    assert guarded.get(RUN, follow_redirects=False).status_code == 303


def test_the_right_token_sets_a_session_cookie_that_opens_the_ui_only(guarded: TestClient) -> None:
    response = guarded.post("/ui/login", data={"token": TOKEN, "next": RUN},
                            follow_redirects=False)  # fmt: skip
    assert response.status_code == 303
    assert response.headers["location"] == RUN
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{COOKIE}=")
    assert TOKEN not in cookie
    for attribute in ("HttpOnly", "SameSite=strict", "Path=/ui", f"Max-Age={SESSION_S}"):
        assert attribute.lower() in cookie.lower(), attribute
    page = guarded.get(RUN, follow_redirects=False)  # the client keeps the cookie
    assert page.status_code == 200
    assert 'data-kind="fenced"' in page.text
    # The cookie is no key to the API: /v1 still asks for the bearer token.
    value = cookie.split(";")[0].split("=", 1)[1]
    guarded.cookies.set(COOKIE, value)  # sent on every path, whatever the browser would do
    assert guarded.get(f"/v1/timeline/{CHANNEL}").status_code == 401


def test_the_bearer_header_opens_the_ui_too(guarded: TestClient) -> None:
    page = guarded.get(RUN, headers={"Authorization": f"Bearer {TOKEN}"})
    assert page.status_code == 200
    assert 'data-kind="unknown"' in page.text


@pytest.mark.parametrize(
    ("path", "token", "refused_with"),
    [("/ui/runs/run-42", None, 405), ("/ui/", None, 405), ("/ui/login/x", None, 405),
     ("/v1/positions", None, 401), ("/ui/runs/run-42", TOKEN, 405), ("/ui/login/", TOKEN, 405),
     ("/v1/positions", TOKEN, 405), ("/healthz", TOKEN, 405)],
)  # fmt: skip
def test_the_login_post_is_the_only_write(
    hostile: Ledger, path: str, token: str | None, refused_with: int
) -> None:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    for client in _client(hostile, token=SecretStr(TOKEN)):
        response = client.post(path, data={"token": TOKEN}, headers=headers, follow_redirects=False)
        assert response.status_code == refused_with, path
        assert COOKIE not in response.headers.get("set-cookie", "")
    for client in _client(hostile):  # no token: no login route at all
        assert client.post("/ui/login", data={"token": "x"}).status_code in (404, 405)


def test_sessions_expire_and_are_bound_to_the_token() -> None:
    now = [1_000_000.0]
    sessions = Sessions(SecretStr(TOKEN), clock=lambda: now[0])
    cookie = sessions.new_cookie()
    assert sessions.cookie_valid(cookie)
    assert not Sessions(SecretStr(TOKEN + "2"), clock=lambda: now[0]).cookie_valid(cookie)
    issued, mac = cookie.split(".")
    assert not sessions.cookie_valid(f"{int(issued) + 1}.{mac}")  # a forged issue time
    for junk in (None, "", "x", "1.", ".ab", "a.b"):
        assert not sessions.cookie_valid(junk)
    now[0] += SESSION_S + 1
    assert not sessions.cookie_valid(cookie)


@pytest.mark.parametrize(
    ("wanted", "goes_to"),
    [("/ui/runs/a", "/ui/runs/a"), ("//evil.example/ui/", "/ui/"), ("https://evil/", "/ui/"),
     ("/v1/duplicates", "/ui/"), ("/ui/\\evil", "/ui/"), (None, "/ui/")],
)  # fmt: skip
def test_login_only_redirects_into_the_ui(wanted: str | None, goes_to: str) -> None:
    assert safe_next(wanted) == goes_to


def test_the_run_page_is_built_in_process_not_over_http_to_itself(hostile: Ledger) -> None:
    app = create_app(hostile.store.cursor)
    seen: list[str] = []

    @app.middleware("http")
    async def record(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        seen.append(request.url.path)
        return await call_next(request)

    with TestClient(app) as client:
        page = client.get(RUN, params={"as_of_offset": "3"})
    assert page.status_code == 200
    assert 'data-kind="unknown"' in page.text
    assert seen == [RUN]  # no /v1 request: the handlers were called, not the API


def test_the_approvals_page_lists_the_pending_intent_escaped(ledger: Ledger) -> None:
    waiting = Op(channel_id=HOSTILE, key_name="pay:1")
    feed(ledger.store, 0, [(waiting.ask("t1", timeout_ms=5_000), 1_000)])
    for client in _client(ledger):
        page = client.get("/ui/approvals")
        assert page.status_code == 200
        assert page.headers["content-security-policy"].startswith("default-src 'none'")
        op = urllib.parse.quote(waiting.operation_id, safe="")
        assert f"/ui/approvals/{op}/approve" in page.text
        assert "&lt;svg onload=alert(1)&gt;" in page.text
        assert HOSTILE not in page.text
        assert "1970-01-01T00:00:06.000Z" in page.text  # the deadline
