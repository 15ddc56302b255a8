"""``mcp-server-git``, a third-party MCP server from PyPI, through the ledger in the crash window.

The agent stages a file and commits it with the server's ``git_add`` and ``git_commit``.
``git_commit`` is not idempotent: a second call makes a second commit, or answers that nothing
is staged, instead of the hash of the commit that happened. The worker that dies does so right
after ``git_commit`` answered, before the ledger recorded the answer.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final, Literal

from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, ListToolsResult, RequestParamsMeta, TextContent

from oncelog.integrations import LedgerRun, ToolPolicy
from oncelog.integrations.mcp import ToolCaller, ledger_session
from oncelog.producer.client import LedgerClient
from oncelog.producer.executor import ToolContext
from oncelog.schemas.models import PreviousAttempt
from tests.integration.frameworks.crash_window import LEASE_S, die_here_if_asked

MESSAGE: Final = "order 4472: the invoice"
FILE: Final = "invoice-4472.txt"
HookShape = Literal["plain", "native"]


def git_server() -> StdioServerParameters:
    """The server (the dev extra installs it) as a stdio subprocess; it exits when its
    client's process dies."""
    return StdioServerParameters(command=sys.executable, args=["-m", "mcp_server_git"])


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo``; its output."""
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def new_repo(repo: Path) -> None:
    """A repository with one commit and an unstaged invoice file."""
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    git(repo, "config", "user.name", "oncelog test")
    git(repo, "config", "user.email", "test@oncelog.invalid")
    (repo / "README").write_text("orders\n")
    git(repo, "add", "README")
    git(repo, "commit", "-q", "-m", "start")
    (repo / FILE).write_text("4472: 42.00\n")


def commits(repo: Path) -> list[str]:
    """The subjects of the repository's commits, newest first."""
    return git(repo, "log", "--format=%s").splitlines()


class DiesAfterCommit:
    """The session, but the process dies as soon as ``git_commit`` answered."""

    def __init__(self, session: ToolCaller) -> None:
        self.session = session

    async def call_tool(
        self, name: str, arguments: dict[str, Any] | None = None, *,
        meta: RequestParamsMeta | None = None,
    ) -> CallToolResult:  # fmt: skip
        result = await self.session.call_tool(name, arguments, meta=meta)
        if name == "git_commit":
            die_here_if_asked()
        return result

    async def list_tools(self) -> ListToolsResult:
        return await self.session.list_tools()


def reconcile_commit(
    repo: Path, shape: HookShape
) -> Callable[[PreviousAttempt, ToolContext], Awaitable[Any]]:
    """A reconcile hook: the commit with this message, if the dead attempt made it."""

    async def reconcile(previous: PreviousAttempt, ctx: ToolContext) -> Any:
        found = git(
            repo, "log", "--format=%H", "--fixed-strings", f"--grep={ctx.params['message']}"
        )
        if not found.strip():
            return None  # never committed: the tool runs
        text = f"Changes committed successfully with hash {found.split()[0]}"
        if shape == "plain":
            return text  # any JSON value: the adapter records it as a CallToolResult
        return CallToolResult(content=[TextContent(type="text", text=text)])

    return reconcile


async def commit_agent(
    client: LedgerClient, channel: str, repo_path: str, *,
    reconcile: HookShape | None, dies: bool,
) -> list[CallToolResult]:  # fmt: skip
    """Stage the invoice and commit it through the ledger; the two answers."""
    repo = Path(repo_path)
    lease = ToolPolicy(lease_seconds=LEASE_S, on_in_progress="wait")
    policies = {}
    if reconcile is not None:
        hook = reconcile_commit(repo, reconcile)
        policies["git_commit"] = ToolPolicy(
            reconcile=hook, lease_seconds=LEASE_S, on_in_progress="wait"
        )
    run = LedgerRun(client, channel, policies=policies, default=lease)
    async with ledger_session(Client(git_server()), run) as tools:
        if dies:
            tools.session = DiesAfterCommit(tools.session)
        added = await tools.call_tool("git_add", {"repo_path": repo_path, "files": [FILE]})
        committed = await tools.call_tool(
            "git_commit", {"repo_path": repo_path, "message": MESSAGE}
        )
    return [added, committed]
