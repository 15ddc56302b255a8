"""Run ``oncelog serve`` as a child process: for the demo, the drills and the tests.

Each of them needs a projector it can SIGKILL or stop without taking itself
down; this is the one place that knows how to start, await and stop one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from pydantic import SecretStr

from oncelog.errors import LedgerError
from oncelog.settings import Settings
from oncelog.waiting import poll_until

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 60.0


def serve_env(settings: Settings) -> dict[str, str]:
    """The environment that points a child ``serve`` at these settings' broker and topics.

    The child's API gets these settings' bearer token (none: it serves loopback only), and
    their write token (none: no write API).
    """
    env = {
        **os.environ,
        "ONCELOG_BOOTSTRAP_SERVERS": settings.bootstrap_servers or "",
        "ONCELOG_TOPIC_PREFIX": settings.topic_prefix,
        "ONCELOG_PARTITIONS": str(settings.partitions),
        "ONCELOG_DB_PATH": str(settings.db_path),
        "ONCELOG_HTTP_PORT": str(settings.http_port),
        "ONCELOG_PROJECTOR_ID": settings.projector_id,
        "ONCELOG_GROUP_SESSION_TIMEOUT_MS": str(settings.group_session_timeout_ms),
        "ONCELOG_MAX_CLOCK_STEP_MS": str(settings.max_clock_step_ms),
    }
    env.pop("ONCELOG_DUCKDB_MEMORY_LIMIT_MB", None)
    if settings.duckdb_memory_limit_mb is not None:
        env["ONCELOG_DUCKDB_MEMORY_LIMIT_MB"] = str(settings.duckdb_memory_limit_mb)
    # The broker login (SASL_SSL on a secure cluster), as given or unset.
    for name, value in (
        ("ONCELOG_SECURITY_PROTOCOL", settings.security_protocol),
        ("ONCELOG_SASL_MECHANISM", settings.sasl_mechanism),
        ("ONCELOG_SASL_USERNAME", settings.sasl_username),
        ("ONCELOG_SSL_CA_LOCATION", settings.ssl_ca_location),
    ):
        env.pop(name, None)
        if value is not None:
            env[name] = value
    for name, secret in (
        ("ONCELOG_HTTP_TOKEN", settings.http_token),
        ("ONCELOG_HTTP_WRITE_TOKEN", settings.http_write_token),
        ("ONCELOG_SASL_PASSWORD", settings.sasl_password),
    ):
        env.pop(name, None)
        if secret is not None:
            env[name] = secret.get_secret_value()
    # The approvals' keys and tokens (JSON objects), as given or unset.
    for name, mapping in (
        ("ONCELOG_APPROVERS", settings.approvers),
        ("ONCELOG_APPROVER_KEYS", _revealed(settings.approver_keys)),
        ("ONCELOG_HTTP_APPROVER_TOKENS", _revealed(settings.http_approver_tokens)),
    ):
        env.pop(name, None)
        if mapping:
            env[name] = json.dumps(mapping)
    return env


def _revealed(secrets: dict[str, SecretStr]) -> dict[str, str]:
    return {name: secret.get_secret_value() for name, secret in secrets.items()}


def spawn(args: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``python ARGS`` with its output appended to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, *args], env=env, stdout=out, stderr=subprocess.STDOUT
        )


def start_serve(settings: Settings, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    """``python -m oncelog serve EXTRA`` on ``settings`` (its DuckDB file, its port)."""
    return spawn(["-m", "oncelog", "serve", *extra], log, serve_env(settings))


def wait_http(proc: subprocess.Popen[bytes], url: str, log: Path) -> None:
    """Wait (bounded) until ``url`` answers; fail with the log tail if the process died."""

    def answers() -> bool:
        if proc.poll() is not None:
            raise LedgerError(f"{proc.args!r} exited early:\n{log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(url, timeout=1).close()
        except OSError:
            return False  # not listening yet
        return True

    if poll_until(time.monotonic() + START_TIMEOUT_S, answers):
        return
    proc.kill()
    raise LedgerError(f"{url} did not answer within {START_TIMEOUT_S} s")


def stop(proc: subprocess.Popen[bytes]) -> int:
    """SIGTERM (serve then commits what it folded), a bounded wait, then SIGKILL."""
    if proc.poll() is None:
        proc.terminate()
        try:
            return proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait(timeout=STOP_TIMEOUT_S)
