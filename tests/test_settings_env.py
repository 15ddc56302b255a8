"""The ``ONCELOG_*`` environment: unknown names warned, bad values one line, connect bounded."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
import typer

from oncelog import settings_env
from oncelog.cli import app, main
from oncelog.errors import BrokerUnreachableError, InvalidConfigurationError
from oncelog.net import free_port
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings
from oncelog.settings_env import OTHER_NAMES, UnknownSettingWarning

# What a bounded wait may overrun by on a loaded two-core machine.
SLACK_S = 3.0


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no name warned yet (the warning is once per process)."""
    monkeypatch.setattr(settings_env, "_warned", set())


def test_a_misspelt_variable_is_warned_with_the_nearest_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ONCELOG_BOOTSTRAP_SERVER", "kafka.prod:9092")
    with pytest.warns(UnknownSettingWarning) as caught:
        Settings()
    (warning,) = caught
    text = str(warning.message)
    assert "ONCELOG_BOOTSTRAP_SERVER " in text
    assert "did you mean ONCELOG_BOOTSTRAP_SERVERS?" in text


def test_known_names_are_not_warned_and_a_name_is_warned_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ONCELOG_HTTP_PORT", "8766")
    monkeypatch.setenv("ONCELOG_URL", "http://127.0.0.1:8765")
    monkeypatch.setenv("ONCELOG_CONNECT_TIMEOUT_S", "2")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnknownSettingWarning)
        assert Settings().http_port == 8766
    monkeypatch.setenv("ONCELOG_NOTHING_LIKE_IT", "1")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for _ in range(2):
            Settings()
    (warning,) = (w for w in seen if issubclass(w.category, UnknownSettingWarning))
    assert str(warning.message).startswith("ONCELOG_NOTHING_LIKE_IT is not an oncelog setting")


def test_a_bad_value_is_one_error_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONCELOG_HTTP_PORT", "abc")
    monkeypatch.setenv("ONCELOG_HTTP_TOKEN", "")  # a secret: its value is never repeated
    with pytest.raises(InvalidConfigurationError) as info:
        Settings()
    message = str(info.value)
    assert message.startswith("[invalid_configuration] ONCELOG_HTTP_PORT: ")
    assert "'abc'" in message
    assert "ONCELOG_HTTP_TOKEN: " in message
    assert "\n" not in message


def test_bad_json_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONCELOG_KAFKA_EXTRA_CONFIG", "{not json")
    with pytest.raises(InvalidConfigurationError, match=r"ONCELOG_KAFKA_EXTRA_CONFIG: not valid"):
        Settings()


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found: list[tuple[str, ...]] = []
    for name, command in sorted(group.commands.items()):
        if hasattr(command, "commands"):  # a group (typer ships its own click)
            found += _commands(command, (*path, name))
        else:
            found.append((*path, name))
    return found


COMMANDS = _commands(typer.main.get_group(app))


def test_the_cli_has_its_commands() -> None:
    assert {("serve",), ("status",), ("broker", "start"), ("topics", "create")} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_answers_a_bad_value_with_one_line_and_exit_2(
    command: tuple[str, ...], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ONCELOG_HTTP_PORT", "abc")
    monkeypatch.setattr(sys, "argv", ["oncelog", *command, "--help"])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error [invalid_configuration] ONCELOG_HTTP_PORT: ")
    assert err.count("\n") == 1


def _oncelog(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oncelog", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_serve_with_a_bad_port_prints_one_line_and_exits_2() -> None:
    done = _oncelog("serve", ONCELOG_HTTP_PORT="abc")
    assert done.returncode == 2
    assert done.stderr.startswith("error [invalid_configuration] ONCELOG_HTTP_PORT: ")
    assert done.stderr.count("\n") == 1, done.stderr


def test_the_cli_warns_of_a_misspelt_variable_in_one_line() -> None:
    done = _oncelog("status", "--help", ONCELOG_BOOTSTRAP_SERVER="kafka.prod:9092")
    assert done.returncode == 0
    lines = [line for line in done.stderr.splitlines() if "ONCELOG_BOOTSTRAP_SERVER " in line]
    assert lines == [
        "warning ONCELOG_BOOTSTRAP_SERVER is not an oncelog setting and is ignored; "
        "did you mean ONCELOG_BOOTSTRAP_SERVERS?"
    ]


def test_connecting_to_no_broker_fails_within_10_s_by_default() -> None:
    assert Timeouts().connect_s == 10.0
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    client = SyncLedgerClient(Settings(bootstrap_servers=address))
    began = time.monotonic()
    with pytest.raises(BrokerUnreachableError, match=address):
        client.open()
    assert time.monotonic() - began <= 10.0 + SLACK_S


def test_the_connect_timeout_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ONCELOG_CONNECT_TIMEOUT_S", "1")
    address = f"127.0.0.1:{free_port()}"
    client = SyncLedgerClient(Settings(bootstrap_servers=address))
    began = time.monotonic()
    with pytest.raises(BrokerUnreachableError, match="within 1s"):
        client.open()
    assert time.monotonic() - began <= 1.0 + SLACK_S


def test_a_command_with_no_broker_fails_within_the_connect_timeout() -> None:
    address = f"127.0.0.1:{free_port()}"
    began = time.monotonic()
    done = _oncelog(
        "topics", "create", ONCELOG_BOOTSTRAP_SERVERS=address, ONCELOG_CONNECT_TIMEOUT_S="1"
    )
    assert time.monotonic() - began <= 1.0 + 2 * SLACK_S  # the interpreter's start too
    assert done.returncode == 2
    assert done.stderr.startswith("error [broker_unreachable] ")
    assert address in done.stderr
    assert "within 1s" in done.stderr


def test_every_oncelog_variable_the_project_sets_is_known() -> None:
    """A switch set by CI, a test or a drill is a setting or one of ``OTHER_NAMES``: else
    every command run under it warns (and output-exact tests fail)."""
    root = Path(__file__).resolve().parents[1]
    places = [root / ".ci" / "run", root / "Makefile"]
    for folder in ("tests", "drills", "bench", "oncelog"):
        places += (root / folder).rglob("*.py")
    quoted = re.compile(r"""["'\s]((?:export )?ONCELOG_[A-Z][A-Z0-9_]*[A-Z0-9])\b""")
    names = {m.removeprefix("export ") for p in places for m in quoted.findall(p.read_text())}
    known = {f"ONCELOG_{name.upper()}" for name in Settings.model_fields} | OTHER_NAMES
    names = {n for n in names if not n.startswith("ONCELOG_TEST_")}  # a test's own switches
    planted = {"ONCELOG_BOOTSTRAP_SERVER", "ONCELOG_NOTHING_LIKE_IT", "ONCELOG_NAMESPACE"}
    assert sorted(names - known - planted) == []
