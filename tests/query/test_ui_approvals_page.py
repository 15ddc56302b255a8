"""The pending approvals page: pure rendering, its forms and its escaping."""

from __future__ import annotations

from html.parser import HTMLParser

from oncelog.query.models import PendingApproval
from oncelog.query.ui.approvals_page import approvals_page, decision_path

EVIL = "<script>alert(1)</script>"


PARAMS = {"op/1": {"order_id": EVIL, "amount_cents": 25_000}}


def pending(**over: object) -> PendingApproval:
    base: dict[str, object] = {
        "operation_id": "op/1", "channel_id": "run-7", "key_name": "refund:2",
        "tool_name": "refund", "request_hash": "h" * 64, "requested_at_ms": 1_000,
        "deadline_ms": 3_601_000, "partition": 0, "offset": 5,
    }  # fmt: skip
    return PendingApproval.model_validate({**base, **over})


class _Forms(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, str | None]] = []
        self.inputs: list[dict[str, str | None]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "form":
            self.forms.append(dict(attrs))
        if tag == "input":
            self.inputs.append(dict(attrs))


def parsed(html: str) -> _Forms:
    p = _Forms()
    p.feed(html)
    return p


def test_a_pending_intent_shows_tool_run_params_times_and_both_forms() -> None:
    html = approvals_page([pending()], PARAMS)
    for shown in ("refund", "run-7", "refund:2", "25000", "1970-01-01T01:00:01.000Z"):
        assert shown in html
    p = parsed(html)
    actions = [(f["method"], f["action"]) for f in p.forms]
    assert actions == [
        ("post", "/ui/approvals/op%2F1/approve"),
        ("post", "/ui/approvals/op%2F1/deny"),
    ]
    hashes = [i["value"] for i in p.inputs if i.get("name") == "request_hash"]
    assert hashes == ["h" * 64] * 2  # the decision binds to the params shown
    tokens = [i for i in p.inputs if i.get("name") == "token"]
    assert [(i["type"], i.get("value")) for i in tokens] == [("password", None)] * 2
    assert [i.get("name") for i in p.inputs].count("reason") == 1  # deny only


def test_params_and_names_from_the_log_are_escaped() -> None:
    html = approvals_page([pending(key_name=EVIL, tool_name=EVIL, channel_id=EVIL)], PARAMS)
    assert "<script>" not in html
    assert "script" not in parsed(html).tags
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_answer_banner_and_the_empty_page() -> None:
    failed = approvals_page([], message=f"unauthorized: {EVIL}", failed=True)
    assert "class='banner error' id='answer'>unauthorized: &lt;script&gt;" in failed
    assert "No approval is pending." in failed
    assert decision_path("a b", "deny") == "/ui/approvals/a%20b/deny"
    assert "(not in the projection" in approvals_page([pending()])
