"""The reference pages: every public name has an entry; the generated pages cover the code."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from types import ModuleType

import pytest
import typer.main
from typer._click import Context
from typer.core import TyperGroup

from docsgen import cli_page, config_page, errors_page, http_page, reference
from docsgen.text import html_without_roles, md_cell
from oncelog.cli import app
from oncelog.errors import LedgerError
from oncelog.query.http import create_app
from oncelog.settings import Settings
from tests.docs.blocks import ROOT

PUBLIC = [
    "oncelog",
    "oncelog.integrations",
    "oncelog.integrations.langchain",
    "oncelog.integrations.openai_agents",
    "oncelog.integrations.pydantic_ai",
    "oncelog.integrations.mcp",
    "oncelog.testing",
]
ENTRIES = set(re.findall(r"^::: ([\w.]+)", (ROOT / "docs/reference/python.md").read_text(), re.M))


def _names(module: ModuleType) -> list[tuple[str, str]]:
    """(module.name, where the object is defined) for each name of ``__all__``."""
    found = []
    for name in module.__all__:
        obj = getattr(module, name)
        home = getattr(obj, "__module__", None)
        defined = f"{home}.{getattr(obj, '__qualname__', name)}" if home else module.__name__
        found.append((f"{module.__name__}.{name}", defined))
    return found


@pytest.mark.parametrize("module_name", PUBLIC)
def test_every_public_name_has_a_reference_entry(module_name: str) -> None:
    module = importlib.import_module(module_name)
    missing = [n for n, home in _names(module) if n not in ENTRIES and home not in ENTRIES]
    assert missing == []


def test_every_reference_entry_names_something_that_exists() -> None:
    for entry in ENTRIES:
        parts = entry.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj: object = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
            break
        else:
            pytest.fail(f"{entry} does not exist")


def test_the_configuration_page_lists_every_setting_with_its_default() -> None:
    page = config_page.render()
    for name, field in Settings.model_fields.items():
        assert f"`ONCELOG_{name.upper()}`" in page
        assert field.description, f"{name} needs a description: the page is made from it"
    assert "| `ONCELOG_PARTITIONS` | integer | `6` |" in page
    assert "| `ONCELOG_HTTP_TOKEN` | secret | unset |" in page
    assert "/root/" not in page
    assert "/home/" not in page


def test_the_error_page_lists_every_code_once_with_its_status() -> None:
    page = errors_page.render()
    for code, owner in LedgerError._declared.items():
        assert page.count(f"| `{code}` |") == 1, code
        assert owner.rsplit(".", 1)[-1] in page
    assert "| `conflict` | `ConflictError` | 409 |" in page
    assert "| `missing_extra` | `integrations.extras.MissingExtraError` |" in page
    assert "also `ToolInProgressError`" in page  # it shares in_progress


def test_the_cli_page_has_every_command() -> None:
    page = cli_page.render()
    root = typer.main.get_command(app)
    assert isinstance(root, TyperGroup)
    for name in root.list_commands(Context(root)):
        assert f"## `oncelog {name}" in page
    assert "`--as-of <str>`" in page
    assert "## `oncelog topics create`" in page


def test_the_http_page_has_every_route_of_the_schema() -> None:
    page = http_page.render()
    spec = create_app(http_page.no_cursor).openapi()
    for path, methods in spec["paths"].items():
        for method in methods:
            assert f"## `{method.upper()} {path}`" in page
    assert "/v1/status/{channel_id}/{step_or_key}" in spec["paths"]
    assert "### StepStatus" in page


def test_docstring_roles_read_as_code_on_the_site() -> None:
    html = "raise :class:<code>~oncelog.errors.LedgerTimeoutError</code> or :func:<code>a.b</code>"
    assert html_without_roles(html) == "raise <code>LedgerTimeoutError</code> or <code>a.b</code>"
    assert md_cell("``x`` :class:`~a.B` <p> | q") == "`x` `a.B` &lt;p&gt; \\| q"


def test_the_committed_reference_pages_are_what_the_code_renders() -> None:
    """docs/reference/{cli,http,configuration,errors}.md are committed (links to them work in
    a clone); a change of the code's help, settings, routes or errors must regenerate them."""
    assert reference.stale(ROOT / "docs") == [], (
        f"stale generated reference pages: run `{reference.REGENERATE}` and commit the result"
    )


def test_a_page_that_differs_from_the_code_is_stale(tmp_path: Path) -> None:
    reference.write(tmp_path)
    assert reference.stale(tmp_path) == []
    page = tmp_path / "reference" / "errors.md"
    page.write_text(page.read_text() + "| `gone` | `GoneError` | 410 | removed |\n")
    (tmp_path / "reference" / "cli.md").unlink()
    assert reference.stale(tmp_path) == ["reference/cli.md", "reference/errors.md"]


def test_the_generated_pages_are_committed_and_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    for uri in reference.PAGES:
        assert f": {uri}\n" in nav
        assert (ROOT / "docs" / uri).is_file()


def test_run_tool_s_options_and_the_decorators_have_reference_entries() -> None:
    """``**options: Unpack[ToolOptions]`` names no option: the reference lists ToolOptions,
    and run_tool's and the decorators' docstrings name every option."""
    from oncelog.producer import client, executor, tool_model  # noqa: PLC0415

    for entry in ("tool_model.ToolOptions", "executor.ledger_tool", "executor.sync_ledger_tool"):
        assert f"oncelog.producer.{entry}" in ENTRIES
    options = tool_model.ToolOptions.__annotations__
    spec_fields = {f for f in tool_model.ToolSpec.__dataclass_fields__ if f != "tool_name"}
    assert set(options) == spec_fields
    documented: list[object] = [client.LedgerClient.run_tool, client.SyncLedgerClient.run_tool]
    documented.append(executor.ledger_tool)
    for function in documented:
        assert all(f"``{name}``" in (getattr(function, "__doc__", "") or "") for name in options), (
            function
        )


def test_the_topic_prefix_setting_names_every_topic() -> None:
    from oncelog.settings import _TopicName  # noqa: PLC0415

    roles = [v.role for v in vars(Settings).values() if isinstance(v, _TopicName)]
    assert len(roles) == 5
    described = Settings.model_fields["topic_prefix"].description or ""
    assert [r for r in roles if f".{r}" not in described] == []
