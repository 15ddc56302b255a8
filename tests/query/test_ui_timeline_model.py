"""The timeline page's model and renderer: pure, from hand-made query answers."""

from __future__ import annotations

from typing import Any

import pytest

from oncelog.query.models import StepStatus, TimelineEntry, Version
from oncelog.query.ui import facts, pages, svg
from oncelog.query.ui.timeline_model import (
    MARK_KINDS,
    AsOf,
    RunData,
    build_view,
    leases_of,
    mark_kind,
    step_number,
)

CH = "run-1"


def entry(offset: int, key: str, kind: str, outcome: str, **over: Any) -> TimelineEntry:
    base: dict[str, Any] = {
        "partition": 0, "offset": offset, "request_id": f"r{offset}", "operation_id": f"op-{key}",
        "key_name": key, "kind": kind, "outcome": outcome, "changed": False, "version": 0,
        "epoch": 1, "worker_id": "w1", "effect": "external", "log_time_ms": 1_000 + 100 * offset,
        "duplicate_effect_suspected": False, "retried": False, "token_fp": "fp1",
    }  # fmt: skip
    return TimelineEntry(**{**base, **over})


def version(n: int, key: str, outcome: str, status: str, offset: int, **over: Any) -> Version:
    base: dict[str, Any] = {
        "operation_id": f"op-{key}", "version": n, "status": status, "outcome": outcome,
        "request_id": f"r{offset}", "epoch": 1, "worker_id": "w1", "token_fp": "fp1",
        "effect": "external", "valid_from_offset": offset, "valid_to_offset": None,
        "log_time_ms": 1_000 + 100 * offset, "lease_deadline_ms": 1_000 + 100 * offset + 250,
        "tool_name": "charge",
    }  # fmt: skip
    return Version(**{**base, **over})


def reclaim_story() -> RunData:
    """step-2: claimed by w1, lease lapses, reclaimed by w2, w1's late completion fenced,
    w2 completes, then a replay. step-1 (pure) completed first."""
    s1, s2 = "step-1", "step-2"
    requests = [
        entry(0, s1, "claim", "claimed", changed=True, version=1, effect="pure"),
        entry(1, s1, "complete", "completed", changed=True, version=2, effect="pure"),
        entry(2, s2, "claim", "claimed", changed=True, version=1),
        entry(3, s2, "heartbeat", "heartbeat_ok", changed=True, version=2),
        entry(
            9,
            s2,
            "claim",
            "reclaimed",
            changed=True,
            version=3,
            epoch=2,
            worker_id="w2",
            token_fp="fp2",
            state_epoch=1,
            state_worker_id="w1",
            outcome_unknown=True,  # w1 went silent: its outcome is unknown
        ),
        entry(  # w1's straggler: its own attempt, having met w2's
            10,
            s2,
            "complete",
            "stale_claim",
            state_epoch=2,
            state_worker_id="w2",
            duplicate_effect_suspected=True,
        ),
        entry(11, s2, "complete", "completed", changed=True, version=4, epoch=2, token_fp="fp2"),
        entry(12, s2, "claim", "replayed", epoch=2, token_fp="fp3"),
    ]
    versions = {
        "op-step-1": [
            version(1, s1, "claimed", "CLAIMED", 0, effect="pure", tool_name="plan"),
            version(
                2,
                s1,
                "completed",
                "COMPLETED",
                1,
                effect="pure",
                tool_name="plan",
                result={"ok": 1},
                result_hash="h1",
            ),
        ],
        "op-step-2": [
            version(1, s2, "claimed", "CLAIMED", 2),
            version(2, s2, "heartbeat_ok", "CLAIMED", 3),  # deadline 1300 + 250 = 1550
            version(3, s2, "reclaimed", "CLAIMED", 9, epoch=2, worker_id="w2", token_fp="fp2"),
            version(
                4,
                s2,
                "completed",
                "COMPLETED",
                11,
                epoch=2,
                worker_id="w2",
                token_fp="fp2",
                result="<b>charged</b>",
                result_hash="h2",
            ),
        ],
    }
    return RunData(CH, requests, versions)


@pytest.mark.parametrize(
    ("kind", "outcome", "suspected", "expected"),
    [
        ("claim", "claimed", False, "claim"),
        ("claim", "reclaimed", False, "reclaim"),
        ("claim", "replayed", False, "replay"),
        ("claim", "in_progress", False, "in-progress"),
        ("claim", "result_expired", False, "result-expired"),
        ("heartbeat", "heartbeat_ok", False, "heartbeat"),
        ("complete", "completed", False, "complete"),
        ("complete", "stale_claim", True, "fenced"),
        ("heartbeat", "stale_claim", False, "stale"),
        ("fail", "failed", False, "fail"),
        ("cancel", "cancel_requested", False, "cancel"),
        ("sweep", "expired", False, "expired"),
        ("sweep", "state_completed", False, "other"),
        ("claim", "conflict", False, "other"),
    ],
)
def test_each_verdict_has_its_mark(kind: str, outcome: str, suspected: bool, expected: str) -> None:
    e = entry(0, "step-1", kind, outcome, duplicate_effect_suspected=suspected)
    assert mark_kind(e) == expected
    assert expected in MARK_KINDS


def test_step_numbers_order_rows_and_named_keys_follow() -> None:
    assert (step_number("step-12"), step_number("charge:1"), step_number("step-x")) == (
        12,
        None,
        None,
    )
    data = RunData(CH, [entry(0, "charge:1", "claim", "claimed"), entry(1, "step-10", "claim",
                   "claimed"), entry(2, "step-9", "claim", "claimed")], {})  # fmt: skip
    assert [r.key_name for r in build_view(data).rows] == ["step-9", "step-10", "charge:1"]


def test_a_heartbeat_moves_the_deadline_and_a_reclaim_ends_a_lapsed_lease() -> None:
    versions = reclaim_story().versions["op-step-2"]
    first, second = leases_of(versions)
    assert (first.epoch, first.start_ms, first.deadline_ms, first.end_ms) == (1, 1200, 1550, 1900)
    assert first.lapsed  # the reclaim came after the deadline
    assert (second.epoch, second.worker_id, second.end_ms) == (2, "w2", 2100)
    assert not second.lapsed  # completed before its deadline


def test_the_view_has_every_fault_with_its_details() -> None:
    view = build_view(reclaim_story())
    step1, step2 = view.rows
    assert (step1.effect, step1.status, step1.tool_name) == ("pure", "completed", "plan")
    assert [m.kind for m in step2.marks] == [
        "claim", "heartbeat", "unknown", "fenced", "complete", "replay"
    ]  # fmt: skip
    fenced = step2.marks[3]
    assert fenced.stale_grant is not None
    assert fenced.stale_grant.epoch == 1
    assert fenced.note == "proven duplicate effect: epoch 1 (w1) completed after epoch 2 took over"
    assert fenced.verdict == "double"  # w1 completed late, w2 ran it again and completed
    # The reclaim marked apart: w1's outcome unknown, and w2 completed without reconciling.
    unknown = step2.marks[2]
    assert unknown.verdict == "possible"
    assert unknown.note is not None
    assert "epoch 1 (w1)" in unknown.note
    assert "possible duplicate" in unknown.note
    assert step2.verdict == "double"  # the step's: the worst of its items'
    assert view.verdict_counts() == {"double": 1}
    assert view.status_counts() == {"completed": 2}
    shown = dict(facts.mark_facts(step2.marks[4], 1000))
    assert (shown["epoch"], shown["worker"], shown["token fp"]) == ("2", "w2", "fp2")
    assert (shown["result hash"], shown["result"]) == ("h2", '"<b>charged</b>"')


def test_as_of_an_offset_shows_the_run_as_it_stood() -> None:
    data = reclaim_story()
    status = StepStatus(channel_id=CH, key_name="step-2", operation_id="op-step-2",
                        status="claimed", finished=False)  # fmt: skip
    point = RunData(CH, data.requests, data.versions, as_of=AsOf(offset=9),
                    statuses={"step-2": status})  # fmt: skip
    view = build_view(point)
    step2 = view.rows[1]
    assert [m.kind for m in step2.marks] == ["claim", "heartbeat", "unknown"]
    assert step2.status == "claimed"  # the time-travel query's answer
    assert step2.last is not None
    assert step2.last.version == 3
    by_time = build_view(RunData(CH, data.requests, data.versions, as_of=AsOf(time_ms=1_150)))
    assert [r.key_name for r in by_time.rows] == ["step-1"]


def test_redacted_and_purged_results_say_so() -> None:
    v = version(2, "s", "completed", "COMPLETED", 1, result=None, result_hash="h")
    assert facts.result_text(v) == "(purged)"
    hidden = v.model_copy(update={"result_redacted": True})
    assert facts.result_text(hidden) == "(redacted by the server)"
    long = v.model_copy(update={"result": "x" * 1000})
    assert len(facts.result_text(long)) == facts.RESULT_CHARS


def test_the_page_escapes_what_comes_from_the_log() -> None:
    hostile = "<script>alert(1)</script>"
    data = reclaim_story()
    requests = [r.model_copy(update={"worker_id": hostile}) for r in data.requests]
    html = pages.run_page(build_view(RunData(hostile, requests, data.versions)), (hostile, ""))
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;b&gt;charged&lt;/b&gt;" in html  # the result, escaped
    assert "<b>charged</b>" not in html


def test_the_chart_marks_carry_stable_kinds_and_link_to_their_details() -> None:
    view = build_view(reclaim_story())
    chart = svg.timeline_svg(view)
    for kind in ("claim", "unknown", "fenced", "replay", "heartbeat", "complete"):
        assert f'data-kind="{kind}"' in chart
    assert 'data-kind="lease-lapsed"' in chart
    # The proven double and the possible one, labelled apart.
    assert chart.count(">duplicate!</text>") == chart.count(">duplicate?</text>") == 1
    html = pages.run_page(view, ("", ""))
    assert 'href="#dm0-10"' in chart
    assert 'id="dm0-10" data-kind="fenced"' in html
    assert 'data-effect="pure"' in chart
    assert 'data-effect="external"' in chart


def test_the_scale_keeps_requests_of_one_millisecond_apart_and_grows_with_time() -> None:
    same = [entry(i, "step-1", "heartbeat", "heartbeat_ok", log_time_ms=5) for i in range(3)]
    view = build_view(RunData(CH, [*same, entry(3, "step-1", "complete", "completed",
                                                log_time_ms=10_005)], {}))  # fmt: skip
    scale = svg.Scale.of(view.marks)
    x = [scale.slot_x(m.ident) for m in view.marks]
    assert x[1] - x[0] == x[2] - x[1] == svg.SLOT_PX
    assert x[3] - x[2] > 2 * svg.SLOT_PX  # ten seconds later: a visible gap
    assert x[2] < scale.at(5_005) < x[3]


@pytest.mark.parametrize(("adopted", "expected"), [(False, "inherit"), (True, "adopt")])
def test_a_branch_shows_what_it_inherited_and_what_it_took_from_another(
    adopted: bool, expected: str
) -> None:
    e = entry(0, "charge#1", "inherit", "inherited", from_channel="run-0", adopted=adopted)
    e = e.model_copy(update={"changed": True, "version": 1})
    assert mark_kind(e) == expected
    view = build_view(
        RunData(CH, [e], {"op-charge#1": [version(1, "charge#1", "inherited", "COMPLETED", 0)]})
    )
    (mark,) = view.marks
    assert mark.note is not None
    assert mark.note.endswith("from branch run-0")
    assert (expected == "adopt") == mark.note.startswith("taken from")
    assert f'class="glyph">{"A" if adopted else "I"}<' in svg.mark_shape(expected, 0, 0)


def approval_story() -> RunData:
    """refund:1 asked, a self-approval refused, approved by ann, claimed and completed;
    refund:2 denied by bob; refund:3 left undecided past its deadline."""
    r1, r2, r3 = "refund:1", "refund:2", "refund:3"
    ask = {"changed": True, "epoch": None, "worker_id": "agent", "token_fp": None}
    why = "over <b>balance</b>"
    requests = [
        entry(0, r1, "claim", "awaiting_approval", version=1, **ask),
        entry(1, r1, "approve", "approval_refused", approver="agent", epoch=None),
        entry(2, r1, "approve", "approved", changed=True, version=2, approver="ann", epoch=None),
        entry(3, r1, "claim", "claimed", changed=True, version=3),
        entry(4, r1, "complete", "completed", changed=True, version=4),
        entry(5, r2, "claim", "awaiting_approval", version=1, **ask),
        entry(6, r2, "deny", "denied", changed=True, version=2, approver="bob", reason=why),
        entry(7, r3, "claim", "awaiting_approval", version=1, **ask),
        entry(8, r3, "claim", "approval_expired", epoch=None),
    ]
    return RunData(CH, requests, {})


def test_each_approval_request_is_its_own_mark_kind() -> None:
    kinds = [mark_kind(e) for e in approval_story().requests]
    assert kinds == [
        "awaiting-approval", "approval-refused", "approved", "claim", "complete",
        "awaiting-approval", "denied", "awaiting-approval", "approval-expired",
    ]  # fmt: skip


def test_the_lane_says_where_each_steps_approval_stands() -> None:
    view = build_view(approval_story())
    lanes = {row.key_name: row.approval for row in view.rows}
    assert lanes == {
        "refund:1": "approved by ann at position 0:2",  # the refused self-approval decided nothing
        "refund:2": "denied by bob: over <b>balance</b>",
        "refund:3": "approval expired",
    }
    pending = build_view(RunData(CH, approval_story().requests[:2], {}))
    assert [row.approval for row in pending.rows] == ["awaiting approval"]


def test_the_run_page_shows_the_decisions_escaped_on_the_lane_and_in_the_details() -> None:
    html = pages.run_page(build_view(approval_story()), ("", ""))
    assert 'data-approval="approved by ann at position 0:2"' in html
    assert "denied by bob: over &lt;b&gt;balance&lt;/b&gt;" in html
    assert "<b>balance</b>" not in html
    assert html.count('data-kind="awaiting-approval"') == 3 * 2  # lane mark and detail row
    for kind in ("approved", "denied", "approval-expired", "approval-refused"):
        assert f'data-kind="{kind}"' in html
