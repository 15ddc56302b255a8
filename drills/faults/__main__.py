"""``make faults``: 100k fuzz cases, 100 projector kills, a broker restart, the failover
drill on a three-node cluster, the network drill, the clock drill and the retention
drill, with figures.

Usage: ``python -m drills.faults [all|failover|network|disk|clock|retention] [--fuzz N]
[--kills N] [--leader-kills N] [--tls] [--rounds N] [--max-hold-s S] [--links L,..]
[--kinds K,..] [--short] [--skip-broker]``. The last line is one JSON object with the
figures, and under ``linearizability`` each drill's history check (operations checked,
unknown ones, ``linearizable``); ``failed`` names the drills whose figures say
``ok: false`` and the histories that are not linearizable (or that recorded none), and
makes the exit status 1. ``failover``, ``network``, ``disk`` (the broker's log directory
filled), ``clock`` (brokers' clocks stepped, :mod:`drills.faults.clock`) and
``retention`` (archive, trim, prune, rebuild: :mod:`drills.retention`) run that drill
alone, and their last line is its figures. ``--tls`` runs the failover drill's cluster
with SASL_SSL and SCRAM-SHA-512 users (``make faults`` does). The upgrade drill
(``python -m drills.upgrade``) runs last.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console

from drills.faults.broker_restart import broker_restart_drill
from drills.faults.clock import clock_drill
from drills.faults.disk_full import broker_disk_full
from drills.faults.failover import failover_drill
from drills.faults.fuzz import fuzz_decoder, fuzz_projector
from drills.faults.net_cluster import cluster_network_drill
from drills.faults.net_schedule import KINDS, schedule, short_schedule
from drills.faults.network import LINKS, PAIRS, combined, network_drill
from drills.faults.projector_kills import projector_kill_drill
from drills.history.check import Verdict
from drills.retention.run import retention_drill
from drills.upgrade.drill import upgrade_drill
from oncelog.broker.local import broker_for_run
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

console = Console(highlight=False, soft_wrap=True)


def _topics(bootstrap: str, tmp: Path, name: str) -> Settings:
    prefix = f"faults-{name}-{uuid.uuid4().hex[:6]}"
    settings = Settings(
        bootstrap_servers=bootstrap, topic_prefix=prefix, partitions=3, db_path=tmp / f"{name}.db"
    )
    create_topics(admin_client(settings, bootstrap), ledger_topics(settings))
    return settings


def main() -> None:
    """Run every drill and print what it found; the last line is JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "drill",
        nargs="?",
        choices=["all", "failover", "network", "disk", "clock", "retention"],
        default="all",
    )
    parser.add_argument("--fuzz", type=int, default=100_000)
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--leader-kills", type=int, default=5)
    parser.add_argument(
        "--tls", action="store_true", help="failover: the cluster runs SASL_SSL, SCRAM users"
    )
    parser.add_argument("--rounds", type=int, default=2, help="network: rounds of the schedule")
    parser.add_argument("--max-hold-s", type=float, default=30.0, help="network: longest cut")
    parser.add_argument("--cluster-rounds", type=int, default=2, help="network: on 3 nodes")
    parser.add_argument("--short", action="store_true", help="network: one fault per link")
    parser.add_argument("--seed", type=int, default=28, help="network: the schedule's seed")
    parser.add_argument(
        "--links", default=",".join(LINKS), help="network: the single broker's links, alone"
    )
    parser.add_argument("--kinds", default=",".join(KINDS), help="network: the kinds of fault")
    parser.add_argument(
        "--skip-broker", action="store_true", help="no broker restart, failover, network"
    )
    args = parser.parse_args()
    if args.drill in ("failover", "network", "disk", "clock", "retention"):
        run = {"failover": lambda: _failover(args.leader_kills, args.tls),
               "network": lambda: _network(args), "disk": _broker_disk,
               "clock": _clock, "retention": _retention}[args.drill]  # fmt: skip
        figures = run()
        print(json.dumps(figures, sort_keys=False))
        raise SystemExit(0 if figures["ok"] else 1)
    with broker_for_run(Settings()) as broker:  # stopped afterwards only if started here
        out = _drills_on(broker.bootstrap, args.fuzz, args.kills)
    if not args.skip_broker:
        # Last, and outside the shared broker's lifetime: each starts and stops its own.
        out["broker_restart"] = _broker_restart()
        out["failover"] = _failover(args.leader_kills, args.tls)
        out["network"] = _network(args)
        out["broker_disk_full"] = _broker_disk()
        out["clock"] = _clock()
        out["retention"] = _retention()
        out["upgrade"] = upgrade_drill(_say)  # the previous release against this one
    out["linearizability"] = histories(out)
    failed = [name for name, figures in out.items() if _failed(figures)]
    print(json.dumps({**out, "failed": failed}, sort_keys=True))
    raise SystemExit(1 if failed else 0)


def _failed(figures: Any) -> bool:
    """A drill's figures that say it failed: ``ok`` false, or a history not linearizable
    (under ``linearizability``, one entry per drill)."""
    if not isinstance(figures, dict):
        return False
    if figures.get("ok") is False:
        return True
    return any(isinstance(v, dict) and v.get("linearizable") is False for v in figures.values())


#: Where each drill's history verdict sits in the JSON line (the decoder fuzz makes no call).
HISTORIES = {
    "fuzz_projector": ("fuzz_projector",),
    "projector_kills": ("projector_kills",),
    "broker_restart": ("broker_restart",),
    "failover": ("failover",),
    "network_single_broker": ("network", "single_broker"),
    "network_cluster": ("network", "cluster"),
    "broker_disk_full": ("broker_disk_full",),
}


def histories(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per drill that ran: operations checked, unknown ones, linearizable (a drill that ran
    and recorded no history is not linearizable: nothing was checked)."""
    found = {}
    for name, path in HISTORIES.items():
        figures: Any = out
        for key in path:
            figures = figures.get(key) if isinstance(figures, dict) else None
        if isinstance(figures, dict):
            found[name] = figures.get("linearizability") or _checked(None)
    return found


def _checked(verdict: Verdict | None) -> dict[str, Any]:
    """A history's figures; none recorded counts as unchecked, not as linearizable."""
    if verdict is None:
        return {"operations_checked": 0, "unknown": 0, "linearizable": False}
    return verdict.figures()


def _drills_on(bootstrap: str, fuzz: int, kills: int) -> dict[str, Any]:
    """The fuzz and projector-kill drills on ``bootstrap``, each on fresh topics."""
    tmp = Path(tempfile.mkdtemp(prefix="oncelog-faults-"))
    out: dict[str, Any] = {}
    decoder = fuzz_decoder(fuzz)
    out["fuzz_decoder"] = {"cases": decoder.cases, "crashes": len(decoder.crashes),
                           "rejected": decoder.rejected, "bad": decoder.bad_sent}  # fmt: skip
    console.print(f"decoder fuzz: {out['fuzz_decoder']} in {decoder.seconds:.0f} s")
    projector = fuzz_projector(_topics(bootstrap, tmp, "fuzz"), fuzz, history_dir=tmp / "fuzz")
    out["fuzz_projector"] = {"cases": projector.cases, "crashes": len(projector.crashes),
                             "stalls": projector.stalls, "bad_sent": projector.bad_sent,
                             "dead_lettered": projector.dead_lettered,
                             "honest_calls": projector.honest_calls,
                             "linearizability": _checked(projector.history)}  # fmt: skip
    console.print(f"projector fuzz: {out['fuzz_projector']} in {projector.seconds:.0f} s")
    (tmp / "kills").mkdir()
    report = projector_kill_drill(_topics(bootstrap, tmp, "kills"), tmp / "kills", kills)
    log = report.log
    out["projector_kills"] = {
        "kills": report.kills, "requests": log.requests, "undecided": log.undecided,
        "divergent": log.divergent_decisions + log.divergent_snapshots,
        "verify_differences": len(log.verify_differences), "ok": report.ok,
        "linearizability": _checked(report.history),
    }  # fmt: skip
    console.print(f"projector kills: {out['projector_kills']} in {report.seconds:.0f} s")
    return out


def _broker_restart() -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="oncelog-faults-broker-"))
    broker = broker_restart_drill(workdir)
    figures = {
        "outage_s": broker.outage_s, "errors_during": broker.errors_during,
        "calls_before": broker.calls_before, "calls_after": broker.calls_after,
        "acknowledged": broker.acknowledged, "acknowledged_lost": broker.acknowledged_lost,
        "requests_on_log": broker.log.requests, "undecided": broker.log.undecided,
        "projector_survived": broker.projector_survived,
        "linearizability": _checked(broker.history),
    }  # fmt: skip
    console.print(f"broker restart: {figures}")
    return figures


def _failover(leader_kills: int, tls: bool = False) -> dict[str, Any]:
    workdir = Path(tempfile.mkdtemp(prefix="oncelog-faults-failover-"))
    report = failover_drill(workdir, leader_kills, tls=tls)
    over = " over SASL_SSL (SCRAM-SHA-512)" if tls else ""
    console.print(f"failover on a three-node cluster{over} ({report.seconds:.0f} s):")
    console.print(report.table(), markup=False)
    for finding in (report.untyped_errors + report.wrong_answers)[:10]:
        console.print(f"  finding: {finding}", markup=False)
    return {**report.figures(), "ok": report.ok}


def _network(args: argparse.Namespace) -> dict[str, Any]:
    """The single broker's links (clients, projector, HTTP), then the cluster's (brokers)."""
    if args.short:
        single, between = short_schedule(LINKS), short_schedule(["brokers"])
    else:
        links, kinds = args.links.split(","), args.kinds.split(",")
        pairs = PAIRS if links == list(LINKS) else []  # the pair only with every link
        hold = {"seed": args.seed, "max_hold_s": args.max_hold_s, "kinds": kinds}
        single = schedule(links, rounds=args.rounds, pairs=pairs, **hold)
        between = schedule(["brokers"], rounds=args.cluster_rounds, **hold)
    reports = {}
    for name, drill, faults in (("single_broker", network_drill, single),
                                ("cluster", cluster_network_drill, between)):  # fmt: skip
        if not faults:
            continue
        workdir = Path(tempfile.mkdtemp(prefix=f"oncelog-faults-network-{name}-"))
        console.print(f"network drill, {name}: {len(faults)} faults ({workdir})")
        report = drill(workdir, faults, report_line=_say)
        console.print(f"network drill, {name}: {report.seconds:.0f} s")
        for finding in report.findings()[:20]:
            console.print(f"  finding: {finding}", markup=False)
        reports[name] = report
    return combined(reports)


def _broker_disk() -> dict[str, Any]:
    """The broker's log directory filled (a tmpfs of its own; needs root)."""
    workdir = Path(tempfile.mkdtemp(prefix="oncelog-faults-disk-"))
    report = broker_disk_full(workdir)
    log = report.log
    figures = {
        "stopped": report.stopped, "acknowledged": report.acknowledged, "lost": report.lost,
        "acknowledged_after_halt": report.acknowledged_after_halt,
        "typed_errors": report.typed_errors, "untyped_errors": len(report.untyped_errors),
        "requests_on_log": log.requests, "undecided": log.undecided,
        "verify_differences": len(log.verify_differences), "same_address": report.same_address,
        "serve_exit": report.serve_exit, "note": report.message,
        "phases_s": {k: round(v, 1) for k, v in report.phases_s.items()},
        "linearizability": _checked(report.history),
    }  # fmt: skip
    # Not acknowledged_after_halt: a decision read just before the halt may be counted
    # just after it; what must hold is that nothing acknowledged is lost.
    zero = ("lost", "untyped_errors", "undecided", "verify_differences")
    ok = report.stopped and report.same_address and report.serve_exit is None
    ok = ok and report.history is not None and report.history.linearizable
    console.print(f"broker disk full ({workdir}): {figures}", markup=False)
    return {**figures, "ok": ok and log.requests > 0 and all(figures[k] == 0 for k in zero)}


def _retention() -> dict[str, Any]:
    """Archive, trim and prune 200k requests; the auditor's answers compared, rebuilt."""
    workdir = Path(tempfile.mkdtemp(prefix="oncelog-faults-retention-"))
    figures = retention_drill(workdir, 200_000, 10_000, _say)
    console.print(f"retention ({workdir}): {figures}", markup=False)
    return figures


def _clock() -> dict[str, Any]:
    """The brokers' clocks stepped while holders heartbeat, before and after the defence."""
    workdir = Path(tempfile.mkdtemp(prefix="oncelog-faults-clock-"))
    report = clock_drill(workdir)
    console.print(f"clock steps ({workdir}, {report.seconds:.0f} s)", markup=False)
    return {**report.figures(), "ok": report.ok}


def _say(line: str) -> None:
    console.print(line, markup=False)


if __name__ == "__main__":
    main()
