"""``wiremcp install`` (``wiremcp.transports.serving.cli.hosts``): the entry it writes into a host's file,
launched as the host would launch it.

Each test runs the command line (``wiremcp.transports.serving.cli.main``, in process) with HOME, XDG_CONFIG_HOME and
APPDATA in a temporary folder, so no real host configuration is touched. Two tests then start exactly
what was written (command, args, env over this environment) from ``/`` with the official MCP client,
as a host does from its own working directory: one per entry shape, one per kind of spec.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent

from tests.support.command_line import run_main

pytestmark = pytest.mark.timeout(30)

WAIT = 10.0  # an upper bound for the client's reads, never a sleep
SERVER = '''\
import os

from wiremcp import MCPServer

server = MCPServer("hello", "1.0.0")


@server.tool()
def greet(name: str) -> str:
    """Greet someone with the greeting the host's configuration gives."""
    return f"{os.environ['GREETING']}, {name}!"
'''
HOSTS = ["claude-desktop", "claude-code", "cursor", "vscode"]
KEY = {"claude-desktop": "mcpServers", "claude-code": "mcpServers", "cursor": "mcpServers", "vscode": "servers"}
TYPED = {"claude-code", "vscode"}  # entries that say "type": "stdio"


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str


@dataclass
class Sandbox:
    """A fake user (HOME, XDG_CONFIG_HOME, APPDATA under ``root``) and a project folder with a server file."""

    root: Path

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def xdg(self) -> Path:
        return self.root / "xdg"

    def install(self, *args: str, cwd: Path | None = None) -> Run:
        """``wiremcp install ARGS`` run by the command line's ``main``, in this process (a process each would
        cost the suite seconds), with its environment, working directory and imports undone afterwards."""
        env = {**os.environ, "HOME": str(self.home), "XDG_CONFIG_HOME": str(self.xdg),
               "APPDATA": str(self.root / "appdata")}
        done = run_main(["install", *args], cwd or self.project, env)
        return Run(done.returncode, done.stdout, done.stderr)

    def installed(self, *args: str, cwd: Path | None = None) -> Run:
        run = self.install(*args, cwd=cwd)
        assert run.code == 0, run.stderr
        return run


@pytest.fixture
def sandbox(tmp_path: Path) -> Sandbox:
    box = Sandbox(tmp_path.resolve())  # the paths a child sees as its working directory
    for folder in (box.home, box.project, box.xdg):
        folder.mkdir()
    (box.project / "server.py").write_text(SERVER)
    return box


def read(path: Path) -> dict[str, Any]:
    config: dict[str, Any] = json.loads(path.read_text())
    return config


async def greet_as_a_host(entry: dict[str, Any]) -> str:
    """Launch exactly the entry, from ``/``, and call its ``greet`` tool."""
    params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd="/",
                                   env={**os.environ, **entry.get("env", {})})
    async with Client(params, read_timeout_seconds=WAIT) as client:
        result = await client.call_tool("greet", {"name": "Ada"})
    assert not result.is_error
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


# -- every host's entry ------------------------------------------------------------------------------------
@pytest.mark.parametrize("host", HOSTS)
async def test_install_writes_an_entry_that_launches_from_anywhere(sandbox: Sandbox, host: str) -> None:
    config = sandbox.root / "conf" / "nested" / f"{host}.json"  # parent folders are created
    run = sandbox.installed(host, "server.py", "--env", "GREETING=hi", "--config", str(config))

    written = read(config)
    assert list(written) == [KEY[host]]
    entry = written[KEY[host]]["hello"]  # named after the server by default
    expected = {"command": sys.executable,  # this environment's interpreter, symlink kept
                "args": ["-m", "wiremcp", "stdio", str(sandbox.project / "server.py")],
                "env": {"GREETING": "hi"}}
    assert entry == ({"type": "stdio", **expected} if host in TYPED else expected)
    (line,) = run.stderr.splitlines()
    assert str(config) in line
    assert "'hello'" in line
    assert "restart" in line or "reload" in line or "new Claude Code session" in line
    assert run.stdout == ""
    if host == "claude-desktop":  # one launch for the untyped entries; the typed one is launched below
        assert await greet_as_a_host(entry) == "hi, Ada!"


async def test_module_spec_from_the_working_directory_gets_app_dir(sandbox: Sandbox) -> None:
    (sandbox.project / "mymod.py").write_text(SERVER)
    config = sandbox.root / "mcp.json"
    sandbox.installed("vscode", "mymod:server", "--name", "greeter", "--env", "GREETING=hello", "--config",
                      str(config))

    entry = read(config)["servers"]["greeter"]
    assert entry["args"] == ["-m", "wiremcp", "stdio", "mymod:server", "--app-dir", str(sandbox.project)]
    assert entry["type"] == "stdio"
    assert await greet_as_a_host(entry) == "hello, Ada!"  # from "/", where mymod is not importable


def test_an_installed_module_needs_no_app_dir(sandbox: Sandbox) -> None:
    run = sandbox.installed("json", "wiremcp.transports.serving.demo:server", "--name", "demo")
    assert json.loads(run.stdout)["demo"]["args"] == ["-m", "wiremcp", "stdio", "wiremcp.transports.serving.demo:server"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the Linux locations (XDG_CONFIG_HOME)")
@pytest.mark.parametrize(("host", "where"), [
    ("claude-desktop", "xdg/Claude/claude_desktop_config.json"),
    ("claude-code", "home/.claude.json"),
    ("cursor", "home/.cursor/mcp.json"),
    ("vscode", "xdg/Code/User/mcp.json"),
])
def test_default_locations(sandbox: Sandbox, host: str, where: str) -> None:
    run = sandbox.installed(host, "server.py")
    path = sandbox.root / where
    entry = read(path)[KEY[host]]["hello"]
    assert "env" not in entry  # only when there is one
    assert entry["args"][-1] == str(sandbox.project / "server.py")
    assert str(path) in run.stderr


# -- keeping the rest of the file ------------------------------------------------------------------------------
def test_keeps_other_servers_and_keys_and_replaces_its_own_entry(sandbox: Sandbox) -> None:
    config = sandbox.root / "claude_desktop_config.json"
    other = {"command": "npx", "args": ["-y", "other-server"], "env": {"TOKEN": "t"}}
    config.write_text(json.dumps({"globalShortcut": "Ctrl+Space", "mcpServers": {"other": other},
                                  "preferences": {"theme": "dark"}}))

    first = sandbox.installed("claude-desktop", "server.py", "--env", "GREETING=hi", "--config", str(config))
    second = sandbox.installed("claude-desktop", "server.py", "--env", "GREETING=bye", "--config", str(config))

    written = read(config)
    assert written["globalShortcut"] == "Ctrl+Space"
    assert written["preferences"] == {"theme": "dark"}
    assert list(written["mcpServers"]) == ["other", "hello"]
    assert written["mcpServers"]["other"] == other
    assert written["mcpServers"]["hello"]["env"] == {"GREETING": "bye"}
    assert "added" in first.stderr
    assert "replaced" in second.stderr
    assert [p.name for p in config.parent.iterdir() if p.name.endswith(".tmp")] == []  # no temporary left


def test_env_file_and_env_flags(sandbox: Sandbox) -> None:
    (sandbox.project / ".env").write_text(
        "# the server's settings\n\nexport GREETING=hi\nQUOTED=\"a b # c\"\nSINGLE='x=y'\n"
        "TRAILING=value # a comment\nOVERRIDDEN=file\n")
    run = sandbox.installed("json", "server.py", "--env-file", ".env", "--env", "OVERRIDDEN=flag", "--env", "EMPTY=")
    (entry,) = json.loads(run.stdout).values()
    assert entry["env"] == {"GREETING": "hi", "QUOTED": "a b # c", "SINGLE": "x=y", "TRAILING": "value",
                            "OVERRIDDEN": "flag", "EMPTY": ""}


def test_json_prints_the_entry_and_writes_nothing(sandbox: Sandbox) -> None:
    run = sandbox.installed("json", "server.py", "--env", "GREETING=hi", "--name", "greeter")
    assert json.loads(run.stdout) == {"greeter": {
        "command": sys.executable, "args": ["-m", "wiremcp", "stdio", str(sandbox.project / "server.py")],
        "env": {"GREETING": "hi"}}}
    assert run.stdout.startswith('{\n  "greeter": {\n')  # indented, to paste
    assert list(sandbox.home.iterdir()) == []
    assert list(sandbox.xdg.iterdir()) == []
    assert sorted(p.name for p in sandbox.project.iterdir()) == ["server.py"]


# -- a user's mistakes: one line, exit status 2 ----------------------------------------------------------------
@pytest.mark.parametrize(("args", "message"), [
    (["claude-desktop", "empty.py"], "defines no MCPServer"),
    (["claude-desktop", "nosuchmodule:server"], "no module named 'nosuchmodule'"),
    (["claude-desktop", "server.py", "--env", "X"], "--env 'X'"),
    (["cursor", "server.py", "--env-file", "bad.env"], "bad.env:2"),
    (["vscode", "server.py", "--config", "broken.json"], "is not valid JSON"),
    (["cursor", "server.py", "--config", "list.json"], "not an object"),
    (["cursor"], "a SPEC or --remote URL: one of them"),
    (["cursor", "server.py", "--remote", "https://x/mcp"], "a SPEC or --remote URL: one of them"),
    (["cursor", "--remote", "x/mcp"], "--remote 'x/mcp' is not an http:// or https:// URL"),
    (["cursor", "--remote", "https://x/mcp", "--header", "Bearer x"], "--header 'Bearer x' is not 'Name: value'"),
    (["cursor", "server.py", "--header", "A: b"], "--header goes with --remote URL"),
], ids=["no-server", "no-module", "bad-env", "bad-env-file", "not-json", "servers-not-an-object", "neither",
        "both", "remote-not-a-url", "bad-header", "header-without-remote"])
def test_mistakes_are_one_line_and_leave_files_alone(sandbox: Sandbox, args: list[str], message: str) -> None:
    (sandbox.project / "empty.py").write_text("x = 1\n")
    (sandbox.project / "bad.env").write_text("GOOD=1\nnot a setting\n")
    broken = sandbox.project / "broken.json"
    broken.write_text('{"servers": {"keep": "me"},')
    listed = sandbox.project / "list.json"
    listed.write_text('{"mcpServers": ["keep"]}')
    before = {p.name: p.read_bytes() for p in sandbox.project.iterdir()}

    run = sandbox.install(*args)

    assert run.code == 2
    (line,) = run.stderr.splitlines()
    assert line.startswith("wiremcp: error: ")
    assert message in line
    assert "Traceback" not in run.stderr
    assert run.stdout == ""
    assert {p.name: p.read_bytes() for p in sandbox.project.iterdir()} == before
    assert list(sandbox.home.iterdir()) == []
    assert list(sandbox.xdg.iterdir()) == []


# -- a remote server, bridged -------------------------------------------------------------------------------
async def test_remote_writes_an_entry_that_bridges_the_server_onto_stdio(sandbox: Sandbox) -> None:
    """``--remote URL``: the host launches ``wiremcp bridge URL`` (its headers with it) and, through it, calls the
    remote server's tool."""
    from tests.support.http import run_uvicorn

    with run_uvicorn("examples.word_count:server") as remote:
        sandbox.installed("claude-code", "--remote", remote.url, "--header", "X-Team: docs")
        (name, written), = read(sandbox.home / ".claude.json")["mcpServers"].items()
        assert name == "127.0.0.1"
        assert written == {"type": "stdio", "command": sys.executable,
                           "args": ["-m", "wiremcp", "bridge", remote.url, "--header", "X-Team: docs"]}
        params = StdioServerParameters(command=written["command"], args=written["args"], cwd="/", env=dict(os.environ))
        async with Client(params, read_timeout_seconds=WAIT) as client:
            result = await client.call_tool("word_count", {"text": "bridged from a host"})
    assert result.structured_content == {"words": 4, "chars": 19}
