"""Check a ``sh`` block without running it: every command it names must exist as written.

``oncelog ...`` must parse with the CLI (the command exists and takes those arguments and
options), ``make X`` must be a Makefile target, ``python -m M`` an importable module; any other
program must be one of ``KNOWN_TOOLS``.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import typer.main
from typer._click import ClickException, Command, Context  # typer carries its own click
from typer.core import TyperGroup

from oncelog.cli import app

ROOT = Path(__file__).resolve().parents[2]
KNOWN_TOOLS = frozenset(
    {
        "pip", "curl", "export", "eval", "kill", "openssl", "docker", "cd", "source", ".",
        "valgrind", "apt-get", "git", "chromium", "echo", "mvn", "java", "node", "npm",
    }
)  # fmt: skip
# Not "duckdb": pip installs the Python package, not its command-line program.
OPERATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", ";;"})
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")


def problems(code: str) -> list[str]:
    """What is wrong with the commands of a ``sh`` block (empty: nothing)."""
    found: list[str] = []
    for line in _logical_lines(code):
        for inner in SUBSTITUTION.findall(line):
            found += [f"{inner!r}: {p}" for p in problems(inner)]
        for command in _commands(line):
            problem = _check(command)
            if problem is not None:
                found.append(f"{shlex.join(command)!r}: {problem}")
    return found


def _logical_lines(code: str) -> Iterator[str]:
    text = code.replace("\\\n", " ")
    yield from (line for line in text.splitlines() if line.strip())


def _commands(line: str) -> Iterator[list[str]]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    command: list[str] = []
    for token in lexer:
        if token in OPERATORS:
            if command:
                yield command
            command = []
        else:
            command.append(token)
    if command:
        yield command


def _check(command: list[str]) -> str | None:
    while command and ASSIGNMENT.match(command[0]):
        command = command[1:]
    if not command:
        return None
    program, args = command[0], command[1:]
    if program == "oncelog":
        return _check_cli(args)
    if program == "make":
        return None if set(args) <= _make_targets() else f"no make target {args}"
    if program.split("/")[-1] in ("python", "python3"):
        return _check_python(args)
    if program in KNOWN_TOOLS:
        return None
    return f"unknown program {program!r} (add it to KNOWN_TOOLS if it is meant)"


def _check_cli(args: list[str]) -> str | None:
    command: Command = typer.main.get_command(app)
    ctx = Context(command, info_name="oncelog")
    path = ["oncelog"]
    while isinstance(command, TyperGroup):
        if not args:
            return "no command given"
        sub = command.get_command(ctx, args[0])
        if sub is None:
            return f"no command {' '.join([*path, args[0]])!r}"
        path.append(args[0])
        command, args = sub, args[1:]
    try:
        command.make_context(" ".join(path), list(args), parent=ctx)
    except ClickException as exc:
        return exc.format_message()
    return None


def _check_python(args: list[str]) -> str | None:
    if args[:1] == ["-m"] and len(args) > 1:
        module = args[1]
        if importlib.util.find_spec(module) is None:
            return f"no module {module}"
        return None
    if args and args[0].endswith(".py"):
        script = ROOT / args[0]
        # A script of the reader's own (app.py) is fine; a path into the repository must exist.
        return None if "/" not in args[0] or script.exists() else f"no script {args[0]}"
    return f"python with {args!r}: neither -m MODULE nor a script"


def _make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text("utf-8")
    return set(re.findall(r"^([A-Za-z][\w-]*):", text, flags=re.M))
