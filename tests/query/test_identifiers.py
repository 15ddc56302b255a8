"""Every channel id and key name a claim accepts can be asked back (docs/spec.md §2).

On the HTTP API, on the CLI (``--url``, through the same served API) and on the page. The
ids that could not be (``/``, ``.``, ``..``, a key of digits only) are refused at claim:
``tests/security/test_sdk_validation.py`` checks that nothing is produced then.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from oncelog.cli import app
from oncelog.errors import InvalidArgumentError
from oncelog.identity.ids import key_of
from oncelog.identity.validation import validate_claimed_names, validate_id
from oncelog.projector.store import Store
from oncelog.query.queries import parse_as_of
from oncelog.query.server import HttpServer, start_http
from oncelog.query.source import HttpSource, LocalSource
from oncelog.query.ui.pages import run_href
from oncelog.query.ui.routes import parse_ui_as_of
from oncelog.schemas.read_api import segment as path_segment
from oncelog.testing import InMemoryLedger
from tests.query.query_factories import claim, commit


class Served:
    """One DuckDB file and its API, served by uvicorn (Starlette's TestClient decodes a path
    twice, so that an id such as ``%2F`` would reach the app as ``/``: not what a server does).
    """

    def __init__(self, store: Store, server: HttpServer) -> None:
        self.store, self.url = store, f"http://127.0.0.1:{server.port}"
        self.claims = 0

    def get(self, path: str) -> httpx.Response:
        return httpx.get(self.url + path, timeout=10)

    def claimed(self, channel: str, key: str) -> int:
        """Fold one claim of ``channel``/``key`` (a fresh token); its offset."""
        self.claims += 1
        offset = self.claims - 1
        n = str(self.claims)
        commit(self.store, 0, [(claim(channel, key, f"r{n}", f"t{n}", "w1"), 1_000 + offset)])
        return offset


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    path: Path = tmp_path_factory.mktemp("ids") / "ids.duckdb"
    with Store(path) as store:
        server = start_http(store, "127.0.0.1", 0)
        try:
            yield Served(store, server)
        finally:
            server.stop()


def _claimable(channel: str, key: str) -> bool:
    try:
        validate_id("channel_id", channel)
        validate_id("key_name", key)
        validate_claimed_names(channel, key)
    except InvalidArgumentError:
        return False
    return True


CHANNELS = st.text(min_size=1, max_size=24).filter(lambda c: _claimable(c, "k"))
KEYS = st.text(min_size=1, max_size=24).filter(lambda k: _claimable("c", k))


def _status_over_http(served: Served, channel: str, key: str) -> Any:
    answer = served.get(f"/v1/status/{path_segment(channel)}/{path_segment(key)}")
    assert answer.status_code == 200, answer.text
    return answer.json()


def _status_on_the_cli(served: Served, channel: str, key: str) -> Any:
    # After "--" an id may start with "-"; the options go first.
    printed = CliRunner().invoke(app, ["status", "--url", served.url, "--json", "--", channel, key])
    assert printed.exit_code == 0, (printed.output, printed.exception)
    return json.loads(printed.output)


def _page(served: Served, channel: str, query: str = "") -> str:
    page = served.get(run_href(channel) + query)
    assert page.status_code == 200, page.text[-500:]
    return page.text


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CHANNELS, KEYS)
@example("acme:run-1", "charge_card#1")
@example("100%", "a?b=c&d")
@example("%2F", "...")
@example("-run", "-k")
@example(" spaced ", "key with spaces")
@example("канал", "ключ")
@example("a\\b", "step-3")
@example("#", "007x")
@example("run²", "step-²")
def test_every_claimable_id_is_asked_back_on_every_path(
    served: Served, channel: str, key: str
) -> None:
    offset = served.claimed(channel, key)
    for status in (
        _status_over_http(served, channel, key),
        _status_on_the_cli(served, channel, key),
    ):
        assert (status["channel_id"], status["key_name"], status["status"]) == (
            channel,
            key,
            "claimed",
        )
    timeline = served.get(f"/v1/timeline/{path_segment(channel)}").json()["items"]
    assert key in {row["key_name"] for row in timeline}
    marker = f'data-key="{html.escape(key, quote=True)}"'
    assert marker in _page(served, channel)
    assert marker in _page(served, channel, f"?as_of_offset={offset}")


@pytest.mark.parametrize(
    ("channel", "key", "says"),
    [
        ("acme/run-1", "k", "contains '/'"),
        ("run", "charge/1", "contains '/'"),
        ("..", "k", "dot segment"),
        ("run", ".", "dot segment"),
        ("run", "42", "pass step=42"),
    ],
)
def test_a_claim_of_an_id_no_query_could_name_is_refused_with_a_hint(
    channel: str, key: str, says: str
) -> None:
    ledger = InMemoryLedger()
    with pytest.raises(InvalidArgumentError) as info:
        ledger.sync_client().claim_execution(channel, key, tool_name="t", params={})
    assert info.value.code == "invalid_argument"
    assert says in info.value.message
    assert ledger.log == []


def test_a_step_stays_claimable_and_its_number_asks_for_it(served: Served) -> None:
    served.claimed("run-steps", "step-42")
    assert _status_over_http(served, "run-steps", "42")["key_name"] == "step-42"
    assert _status_on_the_cli(served, "run-steps", "42")["key_name"] == "step-42"


@pytest.mark.parametrize("channel", ["old/run", ".."])
def test_the_http_source_refuses_an_id_no_path_can_carry_and_says_what_to_do(
    channel: str,
) -> None:
    source = HttpSource("http://127.0.0.1:9")  # never asked: refused before any request
    with pytest.raises(InvalidArgumentError, match="--db"):
        source.status(channel, "k", None)
    with pytest.raises(InvalidArgumentError, match="--db"):
        source.timeline(channel, 10)


def test_an_old_slashed_channel_is_still_answered_from_a_duckdb_file(served: Served) -> None:
    """A log written before the rule still folds, and its ids are asked back offline."""
    served.claimed("legacy/run", "k")
    cursor = served.store.cursor()
    try:
        assert LocalSource(cursor).status("legacy/run", "k", None).status == "claimed"
    finally:
        cursor.close()


@pytest.mark.parametrize("text", ["²", "٤٢", "4²"])
def test_only_ascii_digits_are_a_step_or_an_offset(text: str) -> None:
    """``str.isdigit`` takes these, and ``int`` then fails on some: every path reads them as
    a key name, and refuses them as an offset with a typed error."""
    assert key_of(text) == text
    assert key_of("42") == "step-42"
    with pytest.raises(InvalidArgumentError):
        parse_as_of(text)
    with pytest.raises(InvalidArgumentError):
        parse_ui_as_of(text, None)
