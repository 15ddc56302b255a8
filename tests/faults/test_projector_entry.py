"""The fault hook lives in a drill's entry point, not in ``oncelog serve``'s options."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from drills.faults.projector_entry import main
from oncelog.cli import app

runner = CliRunner()


def test_serve_help_shows_no_fault_option() -> None:
    result = runner.invoke(app, ["serve", "--help"])
    assert result.exit_code == 0
    assert "--db" in result.output
    assert "fault" not in result.output.lower()


def test_serve_refuses_the_old_fault_option() -> None:
    result = runner.invoke(app, ["serve", "--fault-kill-before-commit", "5"])
    assert result.exit_code == 2  # a usage error: there is no such option
    assert "No such option" in result.output


@pytest.mark.parametrize("argv", [[], ["--kill-before-commit", "0"]])
def test_the_entry_point_needs_a_positive_batch_count(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
