"""The retention drill's steps, on a broker of its own (docs/guides/retention.md).

Requests with forks, lapsed leases, doubles, expired results and conflicts; the archive,
with its writer SIGKILLed mid-file and before a manifest, then run again; the log trimmed
behind it (the broker's bytes measured before and after); the DuckDB history pruned; the
auditor's questions compared before and after; a tail written; a rebuild from archive +
tail and ``verify`` of both files; a corrupted archive file refused with a code.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from drills.faults.drill import settle, start_serve
from drills.retention import answers, load
from drills.retention.broker_disk import log_bytes, wait_for_bytes
from drills.retention.killed_archiver import MODULE as KILLED_ARCHIVER
from oncelog.archive.location import TEMP_MARK
from oncelog.broker.local import LocalBroker
from oncelog.kafka.reader import topic_ends
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector import process
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics, set_topic_configs

SEGMENT_BYTES = 1 << 20
"""The requests topic's segments: small, so a trim frees most of the log's bytes."""

BROKER_PROPERTIES = ("log.retention.check.interval.ms=1000", "log.segment.delete.delay.ms=0")
"""The broker drops segments behind the log's start within a second of a trim."""

_SETTLE = Timeouts(total_s=300, resend_after_s=10)


@dataclass
class RetentionReport:
    """The drill's figures; ``ok`` when every check held."""

    requests: int = 0
    operations: int = 0
    stories: dict[str, int] = field(default_factory=dict)
    forks: int = 0
    inherited: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    questions: int = 0
    archive: dict[str, Any] = field(default_factory=dict)
    trimmed_to: dict[int, int] = field(default_factory=dict)
    broker_bytes_before: int = 0
    broker_bytes_after: int = 0
    broker_bytes_bound: int = 0
    pruned_rows: dict[str, int] = field(default_factory=dict)
    storage: dict[str, float] = field(default_factory=dict)
    differences_after_prune: list[str] = field(default_factory=list)
    tail_requests: int = 0
    differences_rebuilt: list[str] = field(default_factory=list)
    verify_live: bool = False
    verify_rebuilt: bool = False
    corrupt_refused: dict[str, str] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """Every check held."""
        return not self.failures

    def figures(self) -> dict[str, Any]:
        """The report as the drill's JSON object (the lists of differences at most 20 long)."""
        out = asdict(self)
        for name in ("differences_after_prune", "differences_rebuilt"):
            out[name] = out[name][:20]
            out[f"{name.removeprefix('differences_')}_differing"] = len(getattr(self, name))
        out["ok"] = self.ok
        return out


class RetentionDrill:
    """One run: its broker, settings and report (see the module's doc for the steps)."""

    def __init__(self, workdir: Path, requests: int, tail: int, say: Callable[[str], None]):
        self.workdir, self.total, self.tail, self.say = workdir, requests, tail, say
        self.report = RetentionReport()
        self.live, self.rebuilt = workdir / "live.duckdb", workdir / "rebuilt.duckdb"
        self.archive = workdir / "archive"
        self.broker = LocalBroker(
            Settings(bootstrap_servers=None, data_dir=workdir / "data"),
            properties=BROKER_PROPERTIES,
        )
        self.settings = Settings()  # set once the broker runs

    def run(self) -> RetentionReport:
        """Every step in order; the broker stops at the end."""
        began = time.monotonic()
        info = self.broker.start()
        try:
            self.settings = Settings(
                bootstrap_servers=info.bootstrap, topic_prefix="retention", partitions=3,
                db_path=self.live, archive_url=str(self.archive), archive_file_records=20_000,
            )  # fmt: skip
            self._topics()
            sample = self._ledger()
            before = answers.answers(self.live, sample)
            self.report.questions = len(before)
            self._archive()
            self._trim()
            self._prune()
            self.report.differences_after_prune = answers.differences(
                before, answers.answers(self.live, sample)
            )
            self._tail()
            self._rebuild(sample)
            self._corrupt()
        finally:
            self.broker.stop()
        for name in ("differences_after_prune", "differences_rebuilt"):
            if getattr(self.report, name):
                self.report.failures.append(f"{name}: {len(getattr(self.report, name))}")
        self.report.seconds = round(time.monotonic() - began, 1)
        return self.report

    # --- steps -------------------------------------------------------------------------

    def _topics(self) -> None:
        admin = admin_client(self.settings, self.settings.bootstrap_servers or "")
        create_topics(admin, ledger_topics(self.settings))
        set_topic_configs(
            admin, self.settings.requests_topic, {"segment.bytes": str(SEGMENT_BYTES)}
        )

    def _ledger(self) -> list[str]:
        """The requests and the forks, folded by ``serve``; the channels to ask about."""
        serve = start_serve(self.settings, self.live, self.workdir / "serve.log")
        try:
            self.say(f"writing {self.total} requests")
            written = load.write(self.settings, self.total)
            self.report.requests, self.report.operations = written.requests, written.operations
            self.report.stories = dict(written.stories)
            self.next_index = written.next_index
            settle(self.settings, _SETTLE)
            children = self._forks(sorted(written.channels)[::97][:12])
            settle(self.settings, _SETTLE)
        finally:
            process.stop(serve)
        self._outcomes()
        by_story: dict[str, list[str]] = {}
        for channel, story in sorted(written.channels.items()):
            by_story.setdefault(story, []).append(channel)
        return sorted({c for cs in by_story.values() for c in cs[:4]} | set(children))

    def _outcomes(self) -> None:
        """Each story's outcomes are in the ledger (doubles among them), none invalid."""
        con = duckdb.connect(str(self.live), read_only=True)
        try:
            rows = con.execute("SELECT outcome, count(*) FROM requests GROUP BY 1").fetchall()
            [(doubles,)] = con.execute(
                "SELECT count(*) FROM requests WHERE duplicate_effect_suspected"
            ).fetchall()
        finally:
            con.close()
        self.report.outcomes = {str(o): int(n) for o, n in sorted(rows)}
        self.report.outcomes["duplicate_effect_suspected"] = int(doubles)
        wanted = ("reclaimed", "stale_claim", "result_expired", "conflict", "inherited",
                  "approved", "denied", "approval_refused")  # fmt: skip
        missing = [
            o for o in (*wanted, "duplicate_effect_suspected") if not self.report.outcomes.get(o)
        ]
        if missing or self.report.outcomes.get("invalid_request"):
            self.report.failures.append(f"outcomes: {self.report.outcomes}")

    def _forks(self, parents: list[str]) -> list[str]:
        children = []
        with SyncLedgerClient(self.settings, worker_id="forker", timeouts=_SETTLE) as client:
            for n, parent in enumerate(parents):
                child = f"fork-{n}"
                fork = client.fork_channel(parent, child)
                self.report.forks += 1
                self.report.inherited += len(fork.inherited)
                children.append(child)
        return children

    def _archive(self) -> None:
        """Killed mid-file, then before a manifest; a third run completes the archive."""
        folder = self.archive / f"{self.settings.requests_topic}"
        for point in ("mid-file", "before-manifest"):
            done = self._python("-m", KILLED_ARCHIVER, point, "2")
            if done.returncode != -9:
                self.report.failures.append(f"archiver {point}: exit {done.returncode}")
            partial = _partial_visible(folder)
            self.report.archive[f"partial_visible_after_{point}"] = partial
            if partial:
                self.report.failures.append(f"after a kill {point}: {partial} visible")
            if point == "mid-file":  # the next run removes it first
                left = self.report.archive["temporaries_after_mid_file"] = _temporaries(folder)
                if not left:
                    self.report.failures.append("the kill left no temporary file: not mid-file")
        rerun = self._oncelog("archive", "run", "--once", "--json")
        if _temporaries(folder):
            self.report.failures.append("the re-run left temporary files behind")
        passes = json.loads(rerun.stdout) if rerun.returncode == 0 else []
        self.report.archive["rerun_adopted"] = sum(p["adopted"] for p in passes)
        self.report.archive["rerun_written"] = sum(p["written"] for p in passes)
        checked = self._oncelog("archive", "verify", "--json")
        facts = json.loads(checked.stdout) if checked.returncode == 0 else []
        self.report.archive["files"] = sum(f["files"] for f in facts)
        self.report.archive["records"] = sum(f["records"] for f in facts)
        records = max(1, self.report.archive["records"])
        parquet = sum(p.stat().st_size for p in folder.glob("*/*.parquet"))
        self.report.storage["archive_bytes_per_request"] = round(parquet / records, 1)
        if checked.returncode != 0 or self.report.archive["records"] != self._log_end():
            self.report.failures.append(f"archive verify: {checked.stdout} {checked.stderr}")

    def _trim(self) -> None:
        topic = self.settings.requests_topic
        logs = self.broker.dir / "logs"
        self.report.broker_bytes_before = log_bytes(logs, topic)
        per_request = self.report.broker_bytes_before / max(1, self._log_end())
        self.report.storage["log_bytes_per_request"] = round(per_request, 1)
        done = self._oncelog("archive", "trim", "--json")
        trims = json.loads(done.stdout) if done.returncode == 0 else []
        self.report.trimmed_to = {t["partition"]: t["after"] for t in trims}
        # What may stay: each partition's active segment, and its indexes' first pages.
        bound = self.settings.partitions * (SEGMENT_BYTES + (64 << 10))
        self.report.broker_bytes_bound = bound
        self.report.broker_bytes_after = wait_for_bytes(logs, topic, bound, timeout_s=60)
        if done.returncode != 0 or self.report.broker_bytes_after > bound:
            self.report.failures.append(f"trim: {done.stdout} {done.stderr}")

    def _prune(self) -> None:
        window = {"ONCELOG_HISTORY_MAX_VERSIONS": "1", "ONCELOG_HISTORY_MAX_AGE_S": "1"}
        before = duckdb_used_bytes(self.live)
        done = self._oncelog("archive", "prune", "--json", env=window)
        moved = sum(p.stat().st_size for p in self.archive.glob("*.pruned/**/*.parquet"))
        self.report.storage.update(
            duckdb_used_bytes_before_prune=before,
            duckdb_used_bytes_after_prune=duckdb_used_bytes(self.live),
            pruned_rows_parquet_bytes=moved,
        )
        pruned: dict[str, int] = {}
        for part in json.loads(done.stdout) if done.returncode == 0 else []:
            pruned[part["table"]] = pruned.get(part["table"], 0) + part["rows"]
        self.report.pruned_rows = pruned
        if done.returncode != 0 or not pruned.get("history") or not pruned.get("requests"):
            self.report.failures.append(f"prune: {done.stdout} {done.stderr}")

    def _tail(self) -> None:
        """Requests after the trim, folded onto the pruned file: the log's tail."""
        serve = start_serve(self.settings, self.live, self.workdir / "serve.log")
        try:
            written = load.write(self.settings, self.tail, start=self.next_index)
            self.report.tail_requests = written.requests
            settle(self.settings, _SETTLE)
        finally:
            process.stop(serve)
        self.report.storage["duckdb_file_bytes_after_tail"] = self.live.stat().st_size
        self.report.storage["duckdb_used_bytes_after_tail"] = duckdb_used_bytes(self.live)

    def _rebuild(self, sample: list[str]) -> None:
        live = self._oncelog("verify", "--db", str(self.live), "--json")
        self.report.verify_live = live.returncode == 0
        began = time.monotonic()
        built = self._oncelog("rebuild", "--from", "requests", "--db", str(self.rebuilt), "--json")
        took = time.monotonic() - began
        if built.returncode == 0:
            refolded = json.loads(built.stdout)["refolded"]
            self.report.storage["rebuild_records_per_s"] = round(refolded / took)
        checked = self._oncelog("verify", "--db", str(self.rebuilt), "--json")
        self.report.verify_rebuilt = built.returncode == 0 and checked.returncode == 0
        for name, done in (("verify live", live), ("rebuild", built), ("verify", checked)):
            if done.returncode != 0:
                self.report.failures.append(f"{name}: {done.stdout[-500:]} {done.stderr[-500:]}")
        if self.report.verify_rebuilt:
            self.report.differences_rebuilt = answers.differences(
                answers.answers(self.live, sample), answers.answers(self.rebuilt, sample)
            )

    def _corrupt(self) -> None:
        """A byte of an archived file changed: both checks refuse it with a code."""
        manifest = next(self.archive.glob("*/*/manifest.json"))
        first = json.loads(manifest.read_text())["files"][0]["name"]
        path = manifest.parent / first
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF
        path.write_bytes(bytes(data))
        for name, args in (
            ("archive verify", ("archive", "verify")),
            ("verify", ("verify", "--db", str(self.live))),
        ):
            done = self._oncelog(*args)
            said = done.stdout + done.stderr
            code = "archive_corrupt" if "archive_corrupt" in said else f"exit {done.returncode}"
            self.report.corrupt_refused[name] = code
            if done.returncode == 0 or code != "archive_corrupt":
                self.report.failures.append(f"{name} of a corrupted archive: {said[-500:]}")

    # --- processes -----------------------------------------------------------------------

    def _env(self, extra: Mapping[str, str] = {}) -> dict[str, str]:
        env = process.serve_env(self.settings)
        env["ONCELOG_ARCHIVE_URL"] = str(self.archive)
        env["ONCELOG_ARCHIVE_FILE_RECORDS"] = str(self.settings.archive_file_records)
        return {**env, **extra}

    def _python(self, *args: str, env: Mapping[str, str] = {}) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *args], env=self._env(env), capture_output=True, text=True,
            timeout=900, check=False,
        )  # fmt: skip

    def _oncelog(self, *args: str, env: Mapping[str, str] = {}) -> subprocess.CompletedProcess[str]:
        done = self._python("-m", "oncelog", *args, env=env)
        self.say(f"oncelog {' '.join(args)}: exit {done.returncode}")
        return done

    def _log_end(self) -> int:
        kafka = self.settings.kafka_config(self.settings.bootstrap_servers or "")
        return sum(topic_ends(kafka, self.settings.requests_topic).values())


def duckdb_used_bytes(path: Path) -> int:
    """The bytes of ``path``'s blocks in use: a file keeps the blocks a delete freed (the
    next writes reuse them) until a checkpoint finds them at its end."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        [(block_size, used)] = con.execute(
            "SELECT block_size, used_blocks FROM pragma_database_size()"
        ).fetchall()
    finally:
        con.close()
    return int(block_size) * int(used)


def _temporaries(folder: Path) -> int:
    """Files under a temporary name (a writer's, killed before its rename)."""
    return sum(1 for path in folder.glob("*/*") if TEMP_MARK in path.name)


def _partial_visible(folder: Path) -> list[str]:
    """Files a reader of the archive would take that are not whole: a ``*.parquet`` name
    whose bytes do not read as Parquet."""
    bad = []
    for path in sorted(folder.glob("*/*.parquet")):
        try:
            pq.read_metadata(path)
        except (OSError, pa.ArrowException):
            bad.append(str(path.relative_to(folder)))
    return bad


def retention_drill(
    workdir: Path, requests: int, tail: int, say: Callable[[str], None]
) -> dict[str, Any]:
    """Run the drill in ``workdir``; its figures (``ok`` when every check held)."""
    os.makedirs(workdir, exist_ok=True)
    return RetentionDrill(workdir, requests, tail, say).run().figures()
