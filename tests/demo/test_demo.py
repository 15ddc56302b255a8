"""`make demo` end to end on the session's broker: assert on its report, not its printout."""

from __future__ import annotations

import io
from pathlib import Path

import httpx
import pytest
from rich.console import Console

from drills.demo import __main__ as demo_main
from drills.demo.__main__ import RUNS, in_a_terminal, run_demo, show_timeline
from drills.demo.fleet import CRASH_AFTER_EFFECT, LOST_RESPONSE, ZOMBIE
from drills.demo.report import TIMELINE_RUN, DemoReport, render
from drills.sample.workflow import STEPS
from oncelog.settings import Settings

pytestmark = pytest.mark.kafka

EXTERNAL_EFFECTS = RUNS * sum(effect == "external" for _, effect in STEPS)


def _name(run_step: tuple[str, int]) -> str:
    return f"{run_step[0]}/{run_step[1]}"


@pytest.fixture(scope="module")
def report(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> DemoReport:
    """One run of the demo, shared by the tests below."""
    data = tmp_path_factory.mktemp("demo")
    # Its files stay in the test's folder: the tests below start serve on them again.
    work = tmp_path_factory.mktemp("demo-run")
    return run_demo(Settings(bootstrap_servers=bootstrap, data_dir=data), workdir=work)


def test_without_a_workdir_the_demo_removes_its_folder_whatever_happens(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    used: list[Path] = []

    def crash(base: Settings, bootstrap: str, tmp: Path) -> DemoReport:
        used.append(tmp)
        (tmp / "ledger.duckdb").write_bytes(b"")  # what a run leaves there
        raise RuntimeError("the fleet crashed")

    monkeypatch.setattr(demo_main, "_run", crash)
    with pytest.raises(RuntimeError):
        run_demo(Settings(bootstrap_servers="127.0.0.1:1"))  # configured: nothing is started
    [tmp] = used
    assert tmp.name.startswith("oncelog-demo-")
    assert not tmp.exists()


def test_every_effect_fired_once_and_verify_is_clean(report: DemoReport, bootstrap: str) -> None:
    assert report.bootstrap == bootstrap
    assert not report.broker_started_here  # the session's broker: used, never stopped
    assert report.effects_by_count == {1: EXTERNAL_EFFECTS}
    assert report.effects_fired_once
    assert report.verify_ok, report.verify.differences
    assert report.verify.compared_snapshots == report.verify.compared_live == RUNS * len(STEPS)
    assert report.ok


def test_the_fleet_recovered_from_each_injected_fault(report: DemoReport) -> None:
    fleet = report.fleet
    assert _name(CRASH_AFTER_EFFECT) in fleet.reclaimed  # the dead worker's lease lapsed ...
    assert _name(CRASH_AFTER_EFFECT) in fleet.reconciled  # ... and its charge was found, not redone
    assert _name(LOST_RESPONSE) in fleet.replayed  # the retry of a lost answer got the record
    assert fleet.fenced == (_name(ZOMBIE),)  # the zombie's late completion was refused


def test_the_ledger_answers_show_the_faults(report: DemoReport) -> None:
    _, crash_step = CRASH_AFTER_EFFECT
    claims = [
        (e.outcome, e.epoch, e.state_epoch)
        for e in report.crash_timeline
        if e.key_name == f"step-{crash_step}" and e.kind == "claim"
    ]
    # The restarted run may ask while the crashed holder's lease still runs: those claims
    # are answered in_progress and grant nothing. Their sender holds no attempt (epoch
    # None); the state they met is the crashed holder's, epoch 1. The grants are exact.
    grants = [(o, epoch) for o, epoch, _ in claims if o in ("claimed", "reclaimed")]
    assert grants == [("claimed", 1), ("reclaimed", 2)]
    waits = {(o, epoch, met) for o, epoch, met in claims if o not in ("claimed", "reclaimed")}
    assert waits <= {("in_progress", None, 1)}
    before, at = report.lost_response
    assert (before.status, at.status) == ("claimed", "completed")
    assert isinstance(before.as_of, int)
    assert at.as_of == before.as_of + 1  # one offset apart: the completion itself
    by_kind = {(d.kind, d.channel_id, d.key_name): d for d in report.duplicates}
    assert len(by_kind) == len(report.duplicates) == 3
    # The crashed worker's charge: its outcome unknown at the reclaim, found downstream.
    crash = by_kind["unknown_outcome", CRASH_AFTER_EFFECT[0], f"step-{CRASH_AFTER_EFFECT[1]}"]
    assert (crash.stale_epoch, crash.current_epoch, crash.reconciled) == (1, 2, "found")
    assert (crash.settled, crash.possible_duplicate) == ("completed", False)
    # The zombie: its outcome unknown when the rescuer took over (found as well), then its
    # late completion proved it ran: named by its own worker and epoch, not the rescuer's.
    zombie = (ZOMBIE[0], f"step-{ZOMBIE[1]}")
    paused = by_kind[("unknown_outcome", *zombie)]
    assert (paused.stale_epoch, paused.reconciled) == (1, "found")
    straggler = by_kind[("stale_completion", *zombie)]
    assert (straggler.stale_epoch, straggler.current_epoch) == (1, 2)
    assert straggler.stale_worker_id == paused.stale_worker_id != "worker-rescue"
    # The rescuer found the zombie's effect: one effect, so the verdict is single, as the
    # crashed worker's (issue 40): no double in the demo, none flagged.
    assert {d.verdict for d in report.duplicates} == {"single"}
    late = next(e for e in report.crash_timeline if e.offset == straggler.offset)
    assert (late.epoch, late.worker_id, late.state_epoch) == (1, straggler.stale_worker_id, 2)
    assert late.state_worker_id == "worker-rescue"


def test_the_printout_renders_the_report(
    report: DemoReport, capsys: pytest.CaptureFixture[str]
) -> None:
    render(report, Console(highlight=False, soft_wrap=True))  # what `make demo` prints
    out = capsys.readouterr().out
    assert f"timeline of {CRASH_AFTER_EFFECT[0]}" in out
    assert "operations by verdict: 0 double, 0 possible, 0 unsettled, 2 single" in out
    assert f"by count per idempotency key: {{1: {EXTERNAL_EFFECTS}}}" in out
    assert out.splitlines()[-2:] == ["verify OK", f"demo finished in {report.seconds:.0f} s"]


def test_the_timeline_run_shows_a_replay_a_reclaim_and_a_fenced_straggler(
    report: DemoReport,
) -> None:
    fleet = report.fleet
    assert f"{TIMELINE_RUN}/1" in fleet.replayed  # the crashed workflow's restart
    assert _name(CRASH_AFTER_EFFECT) in fleet.reclaimed
    assert fleet.fenced == (_name(ZOMBIE),)
    assert ZOMBIE[0] == CRASH_AFTER_EFFECT[0] == TIMELINE_RUN
    outcomes = {(e.key_name, e.outcome) for e in report.crash_timeline}
    assert {("step-1", "replayed"), ("step-2", "reclaimed")} <= outcomes
    assert (f"step-{ZOMBIE[1]}", "stale_claim") in outcomes  # the fenced completion


def _never(prompt: str) -> str:
    raise AssertionError(f"waited for Enter without a terminal: {prompt!r}")


def test_without_a_terminal_the_url_is_printed_and_nothing_waits(
    report: DemoReport, capsys: pytest.CaptureFixture[str]
) -> None:
    assert not in_a_terminal(io.StringIO(), io.StringIO())
    console = Console(highlight=False, soft_wrap=True)
    show_timeline(report, console, interactive=False, wait_for_enter=_never)
    assert report.serve_settings is not None
    url = f"http://127.0.0.1:{report.serve_settings.http_port}/ui/runs/{TIMELINE_RUN}"
    assert url in capsys.readouterr().out
    assert report.timeline_url == url


def test_in_a_terminal_serve_stays_up_until_enter(
    report: DemoReport, capsys: pytest.CaptureFixture[str]
) -> None:
    assert report.serve_settings is not None
    api = f"http://127.0.0.1:{report.serve_settings.http_port}"
    seen: list[httpx.Response] = []

    def press_enter(prompt: str) -> str:  # runs while the demo waits for Enter
        assert "press Enter" in prompt
        seen.append(httpx.get(f"{api}/v1/timeline/{TIMELINE_RUN}?limit=1000", timeout=10))
        seen.append(httpx.get(report.timeline_url, timeout=10))
        return ""

    console = Console(highlight=False, soft_wrap=True)
    show_timeline(report, console, interactive=True, wait_for_enter=press_enter)
    answer, page = seen
    assert answer.status_code == 200
    assert len(answer.json()["items"]) == len(report.crash_timeline)  # the same ledger
    assert page.status_code == 200  # the printed URL is the run's timeline page
    for kind in ("unknown", "replay", "fenced"):  # "unknown": a reclaim of a silent attempt
        assert f'data-kind="{kind}"' in page.text
    assert report.timeline_url in capsys.readouterr().out
    with pytest.raises(httpx.TransportError):  # stopped after Enter
        httpx.get(f"{api}/healthz", timeout=2)
