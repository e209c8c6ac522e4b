"""The pages under ``docs/``, run: every wiremcp code block a reader may copy is executed here.

Each fenced block of a page is preceded by a marker ``<!-- docs: NAME -->``. A block named in ``CHECKED`` is
run by the check of that name: a server definition is executed as the file a reader would save and
exercised with the in-memory ``Client`` (its tools called, its resources read, its prompts got, the results
asserted), a ``server.run(...)`` is run as ``python server.py``. A block whose marker starts with ``before``
is the other framework's code, shown to compare with, and is not run; one that starts with ``not run`` says
why in the marker. ``test_every_block_is_run_or_says_why_not`` fails for a block without a marker, a
Python block of ours that nobody runs, and a check whose block is gone. The pages are also held to what the
documentation site (MkDocs) needs: one H1 each, relative links that reach a page and a heading.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import markdown
from tests.support.feature_examples import (
    check_middleware_example,
    check_mount_example,
    check_rate_limits_example,
)
from tests.support.http import ACCEPT_BOTH, START_BOUND, free_port, serve_in_process, stop_process
from tests.support.markdown import Block
from tests.support.users_project import run_pytest
from wiremcp import MCPError, Principal
from wiremcp.transports import Client

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FASTMCP = DOCS / "coming-from-fastmcp.md"
OFFICIAL_SDK = DOCS / "coming-from-the-official-sdk.md"
INDEX = DOCS / "index.md"
GETTING_STARTED = DOCS / "getting-started.md"
MIDDLEWARE = DOCS / "middleware.md"
RATE_LIMITS = DOCS / "rate-limits.md"
COMPOSITION = DOCS / "composition.md"
REFERENCE = DOCS / "reference"
ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("WIREMCP_")}, "PYTHONDONTWRITEBYTECODE": "1",
       "WIREMCP_LOG_LEVEL": "WARNING"}
STATELESS_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}

pytestmark = pytest.mark.timeout(120)


def blocks(page: Path) -> list[Block]:
    return markdown.blocks(page, "docs")


def block(page: Path, name: str) -> Block:
    return markdown.block(page, "docs", name)


CHECKED = {
    FASTMCP: {"quickstart", "context", "resources", "prompts", "run-http", "testing", "mount", "auth", "middleware"},
    OFFICIAL_SDK: {"sdk-server"},
    INDEX: set(),
    GETTING_STARTED: {"server", "serve-stdio", "serve-http", "testing", "testing-config"},
    MIDDLEWARE: {"middleware"},
    RATE_LIMITS: {"rate-limits"},
    COMPOSITION: {"mount"},
    REFERENCE / "cli.md": set(),  # generated from the code by docs/hooks.py as the site is built
    REFERENCE / "settings.md": set(),
    REFERENCE / "api.md": set(),
}


def test_the_pages_are_the_ones_checked() -> None:
    assert sorted(DOCS.rglob("*.md")) == sorted(CHECKED)


@pytest.mark.parametrize("page", sorted(CHECKED), ids=lambda p: str(p.relative_to(DOCS)))
def test_every_block_is_run_or_says_why_not(page: Path) -> None:
    found = blocks(page)
    unmarked = [b.line for b in found if not b.name]
    assert not unmarked, f"{page.name}: blocks without a <!-- docs: NAME --> marker, at lines {unmarked}"
    for b in found:
        if b.name.startswith("before"):
            assert b.language == "python", f"{page.name}:{b.line}: a 'before' block is the other framework's Python"
        elif b.name not in CHECKED[page]:
            where = f"{page.name}:{b.line}: block {b.name!r}"
            assert b.language != "python", f"{where} is run by no check (every Python block of ours must be)"
            assert b.name.startswith("not run"), f"{where} is run by no check and does not say why"
    names = [b.name for b in found]
    assert sorted(n for n in names if n in CHECKED[page]) == sorted(CHECKED[page]), "a check lost its block"


def _headings(text: str) -> list[tuple[int, str]]:
    """The Markdown headings outside code blocks: (level, text)."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            inside = not inside
        elif not inside and (heading := re.match(r"(#+) (.+)", line)):
            out.append((len(heading.group(1)), heading.group(2)))
    return out


def _slug(heading: str) -> str:
    """The anchor MkDocs gives a heading (its default ``toc`` slugify)."""
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", heading.lower()).strip())


@pytest.mark.parametrize("page", sorted(CHECKED), ids=lambda p: str(p.relative_to(DOCS)))
def test_each_page_has_one_title_and_links_that_reach_a_page_and_a_heading(page: Path) -> None:
    text = page.read_text()
    headings = _headings(text)
    assert [h for h in headings if h[0] == 1] == [headings[0]], "one H1, first"
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"https?://", target):
            continue
        file, _, anchor = target.partition("#")
        linked = (page.parent / file) if file else page
        assert linked.is_file(), f"{page.name}: the link {target} reaches no page"
        if anchor:
            assert anchor in [_slug(h) for _, h in _headings(linked.read_text())], f"{page.name}: no heading {target}"
    assert not re.search(r"\bissue \d|#\d{2,}\b", text), "no issue numbers in user-facing text"


def test_the_readme_links_both_pages_after_its_first_example() -> None:
    readme = (ROOT / "README.md").read_text()
    first_example = readme.index("<!-- readme: server -->")
    for page in ("docs/coming-from-fastmcp.md", "docs/coming-from-the-official-sdk.md"):
        assert readme.find(f"]({page})") > first_example, page
    assert readme.find("](docs/coming-from-fastmcp.md)") < readme.index("## Command line")


# -- the servers, exercised ------------------------------------------------------------------------------------


def _exec_as_file(page: Path, name: str, path: Path) -> dict[str, Any]:
    """A block run as the file ``path``, as the reader would save it (not as ``__main__``: nothing serves)."""
    text = block(page, name).text
    path.write_text(text)
    namespace: dict[str, Any] = {"__name__": f"docs_{name.replace('-', '_')}", "__file__": str(path)}
    exec(compile(text, str(path), "exec"), namespace)
    return namespace


def _messages(client: Client, method: str) -> list[dict[str, Any]]:
    return [n["params"] for n in client.notifications if n["method"] == method]


async def test_the_quickstart_adds(tmp_path: Path) -> None:
    server = _exec_as_file(FASTMCP, "quickstart", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        (tool,) = await client.list_tools()
        result = await client.call_tool("add", {"a": 1, "b": 2})
    assert tool["description"] == "Add two numbers."
    assert result == {"content": [{"type": "text", "text": '{"result":3}'}], "structuredContent": {"result": 3}}


async def test_the_context_example_logs_reports_progress_and_fails_with_its_words(tmp_path: Path) -> None:
    server = _exec_as_file(FASTMCP, "context", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        done = await client.call_tool("check", {"paths": ["a.txt", "b.txt"]}, progress_token="t")
        failed = await client.call_tool("check", {"paths": ["a.txt", "b.md"]})
    assert done["structuredContent"] == {"result": 2}
    assert _messages(client, "notifications/message")[0] == {"level": "info", "data": "checking 2 paths",
                                                            "logger": "files"}
    assert [(p["progress"], p["total"]) for p in _messages(client, "notifications/progress")] == [(1, 2), (2, 2)]
    assert failed == {"content": [{"type": "text", "text": "b.md is not a text file"}], "isError": True}


async def test_the_resources_example_reads_a_resource_and_its_templates(tmp_path: Path) -> None:
    server = _exec_as_file(FASTMCP, "resources", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        config = await client.read_resource("config://app")
        profile = await client.read_resource("users://7/profile")
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("users://8/profile")
        file = await client.read_resource("files://notes/today.txt")
        templates = [t["uriTemplate"] for t in await client.list_resource_templates()]
    assert config["contents"] == [{"uri": "config://app", "mimeType": "application/json", "text": '{"theme":"dark"}'}]
    assert json.loads(profile["contents"][0]["text"]) == {"id": 7, "name": "Ada"}
    assert unknown.value.code == -32002
    assert file["contents"][0]["text"] == "the text of notes/today.txt"
    assert templates == ["users://{user_id}/profile", "files://{+path}"]


async def test_the_prompts_example_gets_a_string_and_messages(tmp_path: Path) -> None:
    server = _exec_as_file(FASTMCP, "prompts", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        prompts = {p["name"]: p for p in await client.list_prompts()}
        review = await client.get_prompt("review", {"code": "x = 1"})
        debug = await client.get_prompt("debug", {"error": "KeyError"})
    assert [a["required"] for a in prompts["review"]["arguments"]] == [True, False]
    assert review["messages"] == [{"role": "user", "content": {
        "type": "text", "text": "Review this code, in a kind tone:\n\nx = 1"}}]
    assert [(m["role"], m["content"]["text"]) for m in debug["messages"]] == [
        ("user", "I get this error: KeyError"), ("assistant", "What did you run before it?")]


class _PortTaken(Exception):
    """The server could not bind its port: another process took it first."""


def _until_answered(url: str, process: subprocess.Popen[bytes], tool: str, arguments: dict[str, Any]) -> Any:
    """The stateless-era answer of the server at ``url`` to a call of ``tool``, once it answers (bounded)."""
    deadline = time.monotonic() + START_BOUND
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": STATELESS_META}}
    headers = {"accept": ACCEPT_BOTH, "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call",
               "mcp-name": tool}
    while True:
        if process.poll() is not None:
            said = process.stderr.read().decode() if process.stderr else ""
            if "address already in use" in said:
                raise _PortTaken(said)
            raise AssertionError(said or "it exited")
        try:
            return httpx.post(url, json=body, headers=headers, timeout=5).json()
        except httpx.TransportError:
            assert time.monotonic() < deadline, f"{url} answers within {START_BOUND}s"
            time.sleep(0.05)  # the poll interval of a bounded wait


@pytest.mark.parametrize(("page", "name", "run_line", "call", "answer"), [
    (FASTMCP, "run-http", 'server.run(transport="http", host="127.0.0.1", port=8000)', ("add", {"a": 2, "b": 3}),
     '{"result":5}'),
    (OFFICIAL_SDK, "sdk-server", 'server.run(transport="streamable-http")', ("add_note", {"name": "n", "text": "t"}),
     "saved n"),
], ids=["fastmcp-http", "official-sdk-streamable-http"])
def test_python_server_py_serves_http_as_the_block_says(page: Path, name: str, run_line: str,
                                                         call: tuple[str, dict[str, Any]], answer: str,
                                                         tmp_path: Path) -> None:
    """The block saved as server.py and run as ``python server.py``: its ``__main__`` serves HTTP (the fixed
    port replaced by a free one)."""
    text = block(page, name).text
    assert run_line in text

    def saved_on(port: int) -> list[str]:
        ported = run_line.replace("port=8000", f"port={port}") if "port=8000" in run_line \
            else run_line[:-1] + f", port={port})"
        (tmp_path / "server.py").write_text(text.replace(run_line, ported))
        return [sys.executable, "server.py"]

    result = _answered_on_a_free_port(saved_on, tmp_path, *call)
    assert result["result"]["content"][0]["text"] == answer, result


def _answered_on_a_free_port(started_on: Callable[[int], list[str]], cwd: Path, tool: str,
                             arguments: dict[str, Any]) -> Any:
    """The answer to ``tool`` from the server ``started_on(port)`` gives the command of, on a free port; a port
    another test (another worker) took before the server bound it is given up for another, three times at most."""
    for _ in range(3):
        port = free_port()
        process = subprocess.Popen(started_on(port), cwd=cwd, env=ENV, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            return _until_answered(f"http://127.0.0.1:{port}/mcp", process, tool, arguments)
        except _PortTaken:
            continue
        finally:
            stop_process(process)
    pytest.fail("three free ports in a row were taken before the server bound them")


def test_python_server_py_serves_the_quickstart_on_stdio(tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text(block(FASTMCP, "quickstart").text)
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": STATELESS_META}}
    done = subprocess.run([sys.executable, "server.py"], cwd=tmp_path, env=ENV, input=json.dumps(request) + "\n",
                          capture_output=True, text=True, timeout=START_BOUND)
    assert json.loads(done.stdout)["result"]["structuredContent"] == {"result": 3}, done.stderr


def test_the_testing_example_passes_with_the_quickstart_as_server_py(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, {"server.py": block(FASTMCP, "quickstart").text,
                                "test_server.py": block(FASTMCP, "testing").text,
                                "pyproject.toml": markdown.block(ROOT / "README.md", "readme", "testing-config").text},
                     ENV)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout, run.stdout


async def test_the_mount_example_serves_the_child_under_its_namespace(tmp_path: Path) -> None:
    main = _exec_as_file(FASTMCP, "mount", tmp_path / "server.py")["main"]
    async with Client(main) as client:
        tools = [t["name"] for t in await client.list_tools()]
        forecast = await client.call_tool("weather_get_forecast", {"city": "Oslo"})
        cities = await client.read_resource("data://weather/cities")
    assert tools == ["weather_get_forecast"]
    assert forecast["content"][0]["text"] == "Sunny in Oslo"
    assert json.loads(cities["contents"][0]["text"]) == {"cities": ["London", "Paris", "Tokyo"]}


async def test_the_auth_example_needs_its_scope_names_the_caller_and_guards_http(tmp_path: Path) -> None:
    namespace = _exec_as_file(FASTMCP, "auth", tmp_path / "server.py")
    server = namespace["server"]
    alice = Principal("static", "alice", scopes=frozenset({"notes:write"}))
    async with Client(server, principal=alice) as client:
        saved = await client.call_tool("add_note", {"text": "hi"})
    async with Client(server, principal=Principal("static", "bob")) as client:
        assert await client.list_tools() == []  # lists leave out what the caller may not use
        with pytest.raises(MCPError) as refused:
            await client.call_tool("add_note", {"text": "hi"})
    async with Client(server) as client:  # no authentication, as on stdio
        local = await client.call_tool("add_note", {"text": "hi"})
    assert saved["content"][0]["text"] == "saved for alice: hi"
    assert refused.value.data == {"requiredScopes": ["notes:write"]}
    assert local["content"][0]["text"] == "saved for a local user: hi"

    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "docs", "version": "0"}}}
    async with serve_in_process(namespace["app"]) as base, httpx.AsyncClient(base_url=base) as http:
        anonymous = await http.post("/mcp", json=initialize, headers={"accept": ACCEPT_BOTH})
        with_token = await http.post("/mcp", json=initialize, headers={"accept": ACCEPT_BOTH,
                                                                        "authorization": "Bearer dev-token"})
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"].startswith("Bearer ")
    assert with_token.status_code == 200, with_token.text
    assert with_token.json()["result"]["serverInfo"]["name"] == "notes"


async def test_the_middleware_example_records_calls_and_refuses_one(tmp_path: Path) -> None:
    namespace = _exec_as_file(FASTMCP, "middleware", tmp_path / "server.py")
    async with Client(namespace["server"]) as client:
        await client.list_tools()
        added = await client.call_tool("add", {"a": 1, "b": 1})
        with pytest.raises(MCPError) as refused:
            await client.call_tool("secrets")
    assert added["structuredContent"] == {"result": 2}
    assert namespace["calls"] == ["add", "secrets"]
    assert (refused.value.code, refused.value.message) == (-32602, "the secrets tool is not served here")


async def test_the_official_sdk_server_logs_reads_prompts_and_completes(tmp_path: Path) -> None:
    server = _exec_as_file(OFFICIAL_SDK, "sdk-server", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        saved = await client.call_tool("add_note", {"name": "call", "text": "ring Bo"}, progress_token=1)
        note = await client.read_resource("notes://call")
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("notes://nothing")
        prompt = await client.get_prompt("summarize", {"name": "todo"})
        completed = await client.complete({"type": "ref/prompt", "name": "summarize"}, "name", "t")
    assert saved["content"][0]["text"] == "saved call"
    assert _messages(client, "notifications/message") == [{"level": "info", "data": "saving call", "logger": "notes"}]
    assert [p["progress"] for p in _messages(client, "notifications/progress")] == [1]
    assert note["contents"][0]["text"] == "ring Bo"
    assert unknown.value.code == -32002
    assert [m["role"] for m in prompt["messages"]] == ["user", "assistant"]
    assert completed["completion"]["values"] == ["todo"]


# -- getting started ---------------------------------------------------------------------------------------------


async def test_getting_started_server_counts_words(tmp_path: Path) -> None:
    server = _exec_as_file(GETTING_STARTED, "server", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        (tool,) = await client.list_tools()
        result = await client.call_tool("word_count", {"text": "read the wire"})
    assert tool["description"] == "Count the words and characters in a text."
    assert result["structuredContent"] == {"words": 3, "chars": 13}


def _wiremcp_command(page: Path, name: str) -> list[str]:
    """The block's one command, ``wiremcp`` being this interpreter's (``python -m wiremcp``)."""
    (line,) = block(page, name).text.splitlines()
    program, *arguments = line.split()
    assert program == "wiremcp"
    return [sys.executable, "-m", "wiremcp", *arguments]


def test_getting_started_serves_on_stdio_as_the_page_says(tmp_path: Path) -> None:
    (tmp_path / "server.py").write_text(block(GETTING_STARTED, "server").text)
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "word_count", "arguments": {"text": "read the wire"}, "_meta": STATELESS_META}}
    done = subprocess.run(_wiremcp_command(GETTING_STARTED, "serve-stdio"), cwd=tmp_path, env=ENV,
                          input=json.dumps(request) + "\n", capture_output=True, text=True, timeout=START_BOUND)
    assert json.loads(done.stdout)["result"]["structuredContent"] == {"words": 3, "chars": 13}, done.stderr


def test_getting_started_serves_http_as_the_page_says(tmp_path: Path) -> None:
    """The page's ``wiremcp http`` command, its fixed port replaced by a free one."""
    (tmp_path / "server.py").write_text(block(GETTING_STARTED, "server").text)
    command = _wiremcp_command(GETTING_STARTED, "serve-http")
    assert command[-2:] == ["--port", "8000"]
    result = _answered_on_a_free_port(lambda port: [*command[:-1], str(port)], tmp_path, "word_count",
                                      {"text": "read the wire"})
    assert result["result"]["structuredContent"] == {"words": 3, "chars": 13}, result


def test_getting_started_test_passes_with_its_server_and_config(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, {"server.py": block(GETTING_STARTED, "server").text,
                                "test_server.py": block(GETTING_STARTED, "testing").text,
                                "pyproject.toml": block(GETTING_STARTED, "testing-config").text}, ENV)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout, run.stdout


# -- the feature pages -------------------------------------------------------------------------------------------


async def test_the_middleware_page_rewrites_filters_and_logs(tmp_path: Path,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    server = _exec_as_file(MIDDLEWARE, "middleware", tmp_path / "server.py")["server"]
    await check_middleware_example(server, caplog)


async def test_the_rate_limits_page_refuses_the_sixth_reindex_with_retry_after(tmp_path: Path) -> None:
    server = _exec_as_file(RATE_LIMITS, "rate-limits", tmp_path / "server.py")["server"]
    await check_rate_limits_example(server)


def test_the_rate_limits_page_is_found_by_its_words() -> None:
    """A reader searching the site for "rate limit" finds this page: its title and its text say it."""
    text = RATE_LIMITS.read_text()
    assert _headings(text)[0] == (1, "Rate limits")
    assert "rate limit" in text


async def test_the_composition_page_serves_the_child_under_its_prefix(tmp_path: Path) -> None:
    server = _exec_as_file(COMPOSITION, "mount", tmp_path / "server.py")["server"]
    await check_mount_example(server)


def test_the_home_page_links_the_feature_pages() -> None:
    text = INDEX.read_text()
    for page in (MIDDLEWARE, RATE_LIMITS, COMPOSITION):
        assert f"]({page.name})" in text, page.name
