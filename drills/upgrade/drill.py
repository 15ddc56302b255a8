"""The upgrade drill: the previous release against the current one, during traffic.

Three phases, each on fresh topics of one broker, each under claim+complete loads that record
their calls: the previous release's SDK against the current ``serve``; the current SDK against
the previous ``serve``; and a group of two ``serve`` members restarted one at a time from the
previous release to the current one and back, under loads of both releases. After each phase
the current release alone settles the log; the drill counts acknowledged completions lost,
undecided requests, divergent republications and ``verify``'s differences, checks the history
linearizable, and has the previous release decode every record of the executions, decisions
and checkpoints topics. The last line is one JSON object naming the previous release.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from drills.faults.drill import acknowledged_lost, check_log, settle
from drills.history import record
from drills.history.check import check
from drills.upgrade import decode
from drills.upgrade.checkpoints import publish_checkpoints
from drills.upgrade.group import Group
from drills.upgrade.release import Release, install
from oncelog.broker.local import broker_for_run
from oncelog.producer.dispatch import Timeouts
from oncelog.projector.process import stop as stop_process
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

CURRENT = Path(sys.executable)
ACKS_PER_STEP = 60
"""Completions acknowledged between two steps of a phase: traffic through every step."""


def _settings(bootstrap: str, workdir: Path, phase: str) -> Settings:
    prefix = f"upgrade-{phase}-{uuid.uuid4().hex[:6]}"
    settings = Settings(bootstrap_servers=bootstrap, topic_prefix=prefix, partitions=3,
                        db_path=workdir / "final.duckdb")  # fmt: skip
    create_topics(admin_client(settings, bootstrap), ledger_topics(settings))
    return settings


def old_sdk_new_serve(group: Group, old: Path, contested: bool) -> list[str]:
    """The previous SDK's load against the current ``serve`` (contested: the current fold
    judges every claim)."""
    group.start_member("p1", CURRENT)
    group.start_load("old", old, rivals=True)
    return [] if group.wait_acks(ACKS_PER_STEP * 2) else ["no traffic"]


def new_sdk_old_serve(group: Group, old: Path, contested: bool) -> list[str]:
    """The current SDK's load against the previous ``serve``."""
    group.start_member("p1", old)
    group.start_load("new", CURRENT, rivals=contested)
    return [] if group.wait_acks(ACKS_PER_STEP * 2) else ["no traffic"]


def rolling(group: Group, old: Path, contested: bool) -> list[str]:
    """Two members, the previous release, restarted one at a time to the current one and
    back, under a load of each release; a step without traffic after it is a finding."""
    stalled = []
    for projector_id in ("p1", "p2"):
        group.start_member(projector_id, old)
    group.start_load("old", old, rivals=contested)
    group.start_load("new", CURRENT, rivals=contested)
    group.wait_acks(ACKS_PER_STEP)
    for step, (projector_id, python) in enumerate(
        [("p1", CURRENT), ("p2", CURRENT), ("p1", old), ("p2", old)]
    ):
        group.replace_member(projector_id, python)
        if not group.wait_acks(ACKS_PER_STEP):
            stalled.append(f"step {step}: {projector_id} -> {python}")
    return stalled


PHASES: dict[str, Callable[[Group, Path, bool], list[str]]] = {
    "old_sdk_new_serve": old_sdk_new_serve,
    "new_sdk_old_serve": new_sdk_old_serve,
    "rolling_restart": rolling,
}


def run_phase(
    bootstrap: str, workdir: Path, name: str, release: Release, contested: bool = False
) -> dict[str, Any]:
    """One phase, then the checks, on the current release alone. ``contested``: claims are
    contested where the previous release folds too (docs/spec.md §10 says why not by
    default)."""
    began = time.monotonic()
    workdir.mkdir(parents=True)
    settings = _settings(bootstrap, workdir, name)
    group = Group(settings, workdir)
    try:
        stalled = PHASES[name](group, release.python, contested)
        publish_checkpoints(settings, 20)
        loads = group.stop_loads()
    finally:
        group.stop_all()
    # The current release alone, in a file of its own, restores and settles every partition.
    final = Group(settings, workdir)
    final.start_member("final", CURRENT)
    _, proc = final.members.pop("final")
    try:
        settle(settings, Timeouts(total_s=180, resend_after_s=5))
    finally:
        stop_process(proc)
    return {**_figures(group, release, stalled, loads), "seconds": round(time.monotonic() - began)}


def _figures(
    group: Group, release: Release, stalled: list[str], loads: list[dict[str, Any]]
) -> dict[str, Any]:
    settings, workdir, acks = group.settings, group.workdir, group.acks()
    db = workdir / "final.duckdb"
    log = check_log(settings, db, workdir / "scratch.duckdb")
    operations = record.load((workdir / "history").glob("*.history.jsonl"))
    verdict = check(operations, workdir / "history" / "history.json")
    old_readers = json.loads(group.run_module(release.python, decode.MODULE))
    untyped = [e for s in loads for e in s["untyped_errors"]]
    wrong = [e for s in loads for e in s["wrong_answers"]]
    figures = {
        "acknowledged": len(acks), "lost": acknowledged_lost(db, acks),
        "requests_on_log": log.requests, "undecided": log.undecided,
        "divergent": log.divergent_decisions + log.divergent_snapshots,
        "verify_differences": len(log.verify_differences),
        "verify_examples": log.verify_differences[:3], "untyped_errors": untyped,
        "wrong_answers": wrong, "stalled_steps": stalled,
        "old_readers_undecodable": sum(t["undecodable"] for t in old_readers.values()),
        "old_readers": old_readers, "linearizability": verdict.figures(),
    }  # fmt: skip
    zero = ("lost", "undecided", "divergent", "verify_differences", "old_readers_undecodable")
    ok = all(figures[k] == 0 for k in zero) and not (untyped or wrong or stalled)
    figures["ok"] = ok and verdict.linearizable and len(acks) > 0
    return figures


def upgrade_drill(
    say: Callable[[str], None] = print, phases: list[str] | None = None, contested: bool = False
) -> dict[str, Any]:
    """Install the previous release and run the phases (all three by default); their
    figures, and ``ok``."""
    phases = list(PHASES) if phases is None else phases
    release = install()
    say(f"previous release {release.name} ({release.commit[:12]}) in {release.python}")
    workdir = Path(tempfile.mkdtemp(prefix="oncelog-upgrade-"))
    out: dict[str, Any] = {"previous_release": release.name, "commit": release.commit}
    with broker_for_run(Settings()) as broker:
        for name in phases:
            out[name] = run_phase(broker.bootstrap, workdir / name, name, release, contested)
            say(f"upgrade, {name}: {json.dumps(out[name])}")
    out["ok"] = all(out[name]["ok"] for name in phases)
    return out
