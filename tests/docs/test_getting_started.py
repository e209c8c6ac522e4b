"""``docs/getting-started.md``, run: the server, the two commands that serve it, its test."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.docs_pages import (
    DOCS,
    ENV,
    STATELESS_META,
    answered_on_a_free_port,
    block,
    exec_as_file,
    sh,
    wiremcp_command,
)
from tests.support.http import START_BOUND
from tests.support.users_project import run_pytest
from wiremcp.transports import Client

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "getting-started.md"
CHECKED = {"server", "serve-stdio", "serve-http", "list-call", "install", "testing", "testing-config"}


async def test_getting_started_server_counts_words(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "server", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        (tool,) = await client.list_tools()
        result = await client.call_tool("word_count", {"text": "read the wire"})
    assert tool["description"] == "Count the words and characters in a text."
    assert result["structuredContent"] == {"words": 3, "chars": 13}


def test_getting_started_serves_on_stdio_as_the_page_says(tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text(block(PAGE, "server").text)
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "word_count", "arguments": {"text": "read the wire"}, "_meta": STATELESS_META}}
    done = subprocess.run(wiremcp_command(PAGE, "serve-stdio"), cwd=tmp_path, env=ENV,
                          input=json.dumps(request) + "\n", capture_output=True, text=True, timeout=START_BOUND)
    assert json.loads(done.stdout)["result"]["structuredContent"] == {"words": 3, "chars": 13}, done.stderr


def test_getting_started_serves_http_as_the_page_says(tmp_path: Path) -> None:
    """The page's ``wiremcp http`` command, its fixed port replaced by a free one."""
    (tmp_path / "server.py").write_text(block(PAGE, "server").text)
    command = wiremcp_command(PAGE, "serve-http")
    assert command[-2:] == ["--port", "8000"]
    result = answered_on_a_free_port(lambda port: [*command[:-1], str(port)], tmp_path, "word_count",
                                      {"text": "read the wire"})
    assert result["result"]["structuredContent"] == {"words": 3, "chars": 13}, result


def test_getting_started_test_passes_with_its_server_and_config(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, {"server.py": block(PAGE, "server").text,
                                "test_server.py": block(PAGE, "testing").text,
                                "pyproject.toml": block(PAGE, "testing-config").text}, ENV)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout, run.stdout


def test_getting_started_lists_and_calls_from_the_shell(tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text(block(PAGE, "server").text)
    listed, called = (sh(line, cwd=tmp_path) for line in block(PAGE, "list-call").text.splitlines())
    assert listed.returncode == 0, listed.stderr
    assert "word_count — Count the words and characters in a text." in listed.stdout, listed.stdout
    assert called.returncode == 0, called.stderr
    assert json.loads(called.stdout) == {"words": 3, "chars": 13}


def test_getting_started_install_writes_a_host_entry_that_serves_from_anywhere(tmp_path: Path) -> None:
    """The page's command, with ``--config`` added so that it writes a file of the test's, not the reader's
    Claude Desktop configuration; the entry it writes, run from another directory, serves the tool."""
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "server.py").write_text(block(PAGE, "server").text)
    config = tmp_path / "claude_desktop_config.json"
    (line,) = block(PAGE, "install").text.splitlines()
    written = sh(f"{line} --config {config}", cwd=tmp_path / "project")
    assert written.returncode == 0, written.stderr
    (entry,) = json.loads(config.read_text())["mcpServers"].values()
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "word_count", "arguments": {"text": "read the wire"}, "_meta": STATELESS_META}}
    done = subprocess.run([entry["command"], *entry["args"]], cwd=tmp_path, env=ENV, input=json.dumps(request) + "\n",
                          capture_output=True, text=True, timeout=START_BOUND)
    assert json.loads(done.stdout)["result"]["structuredContent"] == {"words": 3, "chars": 13}, done.stderr
