"""The command-line reference, generated from the ``oncelog`` typer app."""

from __future__ import annotations

import re
from collections.abc import Iterator

import typer.main
from typer._click import Command, Context, Parameter  # typer carries its own click
from typer.core import TyperGroup, TyperOption

from docsgen.text import md_cell
from oncelog.cli import app

INTRO = """\
# Command line

`oncelog` is installed with the package (`pip install oncelog`; `python -m oncelog` runs the
same). Settings come from `ONCELOG_*` variables ([configuration](configuration.md)). A
`LedgerError` prints `error [code] message` on stderr and exits with status 2
([error codes](errors.md)).

This page is generated from the CLI's own definitions (`make docs-reference`).

"""


def render() -> str:
    """The page: one section per command, with its arguments and options."""
    root = typer.main.get_command(app)
    sections = [_section(path, command) for path, command in _commands(root, "oncelog")]
    return INTRO + "\n".join(sections)


def _commands(command: Command, path: str) -> Iterator[tuple[str, Command]]:
    if isinstance(command, TyperGroup):
        ctx = Context(command, info_name=path)
        for name in sorted(command.list_commands(ctx)):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from _commands(sub, f"{path} {name}")
    else:
        yield path, command


def _section(path: str, command: Command) -> str:
    ctx = Context(command, info_name=path)
    # typer writes an argument {channel_id}; the help and the README write CHANNEL_ID.
    usage = re.sub(
        r"\{(\w+)\}", lambda m: m[1].upper(), " ".join(command.collect_usage_pieces(ctx))
    )
    lines = [f"## `{path}`", "", f"`{path} {usage}`", "", _help(command), ""]
    params = [p for p in command.get_params(ctx) if p.name != "help"]
    if params:
        lines += ["| argument or option | default | what it does |", "|---|---|---|"]
        lines += [_param_row(p, ctx) for p in params]
        lines.append("")
    return "\n".join(lines)


def _help(command: Command) -> str:
    text = (command.help or "").split("\f")[0]
    return "\n".join(line.strip() for line in text.strip().splitlines()).replace("``", "`")


def _param_row(param: Parameter, ctx: Context) -> str:
    record = param.get_help_record(ctx)
    if isinstance(param, TyperOption) and record is not None:
        names = f"`{record[0]}`"  # the option's names and its metavar: "--as-of TEXT"
    else:
        names = f"`{(param.metavar or param.name or '').upper()}`"
    text = getattr(param, "help", None) or ""
    default = param.default
    shown = "" if default is None or default is False or default == () else f"`{default}`"
    if param.required:
        shown = "required"
    return f"| {names.replace('|', chr(92) + '|')} | {shown} | {md_cell(text)} |"
