"""The README, run: every code block a reader may copy is executed here, the way the reader would.

Each fenced block of README.md is preceded by a marker ``<!-- readme: NAME -->``; this module has a check
for every name, and a block without a marker, or with a name nobody checks, fails
``test_every_block_is_run_or_says_why_not``. Commands run in a shell with the venv's ``bin`` first on
PATH, from the repository root, as typed; only fixed ports (8000, 9000) are replaced by free ones, and
``--host 0.0.0.0`` by the loopback address. Servers started in the background are stopped at the end.
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support import http as raw
from tests.support import markdown, walks
from tests.support.feature_examples import (
    check_middleware_example,
    check_mount_example,
    check_rate_limits_example,
)
from tests.support.http import (
    ACCEPT_BOTH,
    CLIENT_INFO,
    START_BOUND,
    _wait_until_accepting,
    asgi_client,
    free_port,
    stop_process,
)
from tests.support.markdown import Block
from tests.support.parts import missing
from tests.support.users_project import run_pytest
from wiremcp import MCPServer
from wiremcp.observer import OUTCOMES
from wiremcp.transports import Client

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
ENV = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "PYTHONDONTWRITEBYTECODE": "1",
       "WIREMCP_LOG_LEVEL": "WARNING"}
NOT_RUN = ("install", "not run")
"""Markers of blocks that are not run here, each saying why in the marker itself."""

pytestmark = pytest.mark.timeout(120)


def blocks() -> list[Block]:
    return markdown.blocks(README, "readme")


def block(name: str) -> Block:
    return markdown.block(README, "readme", name)


CHECKED = {"server", "serve", "wire-in", "wire-out", "handler", "testing", "testing-config", "request-state-keys", "auth-env",
           "auth-mount", "dev-auth", "layout", "commands", "list-call", "host-entry", "claude-desktop-config",
           "vscode-config", "walk-http-handshake", "walk-http-stateless", "walk-stdio", "walk-elicitation-asked",
           "walk-elicitation-answered", "skills", "apps", "middleware", "rate-limits", "mount", "backend", "curl-handshake",
           "curl-handshake-out", "curl-stateless", "curl-stateless-out"}


def test_every_block_is_run_or_says_why_not() -> None:
    names = [b.name for b in blocks()]
    unmarked = [b.line for b in blocks() if not b.name]
    assert not unmarked, f"README blocks without a <!-- readme: NAME --> marker, at lines {unmarked}"
    unknown = [n for n in names if n not in CHECKED and not n.startswith(NOT_RUN)]
    assert not unknown, unknown
    assert sorted(set(names) & CHECKED) == sorted(CHECKED), "a check lost its block"


def test_the_opening_block_is_the_two_commands_ci_runs() -> None:
    first = blocks()[0]
    assert first.language == "sh"
    install, test = first.text.splitlines()
    assert install.endswith("uvicorn app:asgi")
    assert test.endswith("python -m pytest")
    ci = subprocess.run(["awk", r"/^```sh$/{inside=1; next} /^```$/{if (inside) exit} inside", str(README)],
                        capture_output=True, text=True, check=True).stdout.splitlines()
    assert ci[1] == test  # what .ci/run extracts and runs


# -- the server and its wire ------------------------------------------------------------------------------
def test_the_server_block_is_examples_word_count() -> None:
    source = (ROOT / "examples" / "word_count.py").read_text()
    without_docstring = source[source.index('"""', 3) + 3:].lstrip("\n")
    assert block("server").text == without_docstring


def _sh(command: str, **options: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=ROOT, env=ENV, capture_output=True, text=True,
                          timeout=60, **options)


def test_the_wire_transcript_is_what_the_stdio_server_answers() -> None:
    sent = block("wire-in").text
    answered = _sh(f"{block('serve').text.splitlines()[0]}", input=sent)
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout == block("wire-out").text


def test_the_try_it_line_answers_the_same() -> None:
    """'Try it: printf ... | wiremcp stdio ...', with the four lines put in."""
    text = README.read_text()
    line = re.search(r"Try it: `(printf [^`]+)`", text)
    assert line is not None
    command = line.group(1)
    for n, message in enumerate(block("wire-in").text.splitlines(), start=1):
        command = command.replace(f"'<line {n}>'", shlex.quote(message))
    answered = _sh(command)
    assert answered.returncode == 0, answered.stderr
    assert answered.stdout == block("wire-out").text


@contextlib.contextmanager
def background(command: str, **env: str) -> Iterator[subprocess.Popen[str]]:
    """``command`` in a shell of its own, stopped (its whole process group) on the way out."""
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(["bash", "-c", command], cwd=ROOT, env={**ENV, **env}, stdout=log,
                                   stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            yield process
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            stop_process(process)  # type: ignore[arg-type]
            log.seek(0)
            output = log.read()
    assert "Traceback" not in output, output


def accepting(process: subprocess.Popen[str], port: int) -> None:
    assert _wait_until_accepting(process, "127.0.0.1", port, time.monotonic() + START_BOUND), "it exited"  # type: ignore[arg-type]


def initialize(url: str, **headers: str) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": CLIENT_INFO}}
    return httpx.post(url, json=body, headers={"accept": ACCEPT_BOTH, **headers}, timeout=10)


@pytest.mark.parametrize("line", [1, 2])
def test_the_http_serve_commands_serve_word_count(line: int) -> None:
    port = free_port()
    command = block("serve").text.splitlines()[line].split("#")[0].strip()
    command = command.replace("8000", str(port)) if "8000" in command else f"{command} --port {port}"
    with background(command) as process:
        accepting(process, port)
        answer = initialize(f"http://127.0.0.1:{port}/mcp")
    assert answer.status_code == 200, answer.text
    assert answer.json()["result"]["serverInfo"]["name"] == "word_count"


@pytest.mark.parametrize("era", ["handshake", "stateless"])
def test_the_curl_examples_print_what_the_readme_says(era: str) -> None:
    """The curl commands of each era, run as typed (with real curl) against ``uvicorn app:asgi`` serving
    word_count, print the answer the README shows."""
    if shutil.which("curl") is None:
        missing("no curl on PATH for the README's curl examples (Debian: apt-get install curl)")
    port = free_port()
    serve = f"WIREMCP_SERVER=examples.word_count:server uvicorn app:asgi --port {port}"
    with background(serve) as process:
        accepting(process, port)
        done = _sh(block(f"curl-{era}").text.replace("8000", str(port)))
    assert done.returncode == 0, done.stderr
    assert done.stdout + "\n" == block(f"curl-{era}-out").text, done.stdout


# -- the command line and hosts ------------------------------------------------------------------------------
def test_the_commands_are_the_command_lines() -> None:
    from wiremcp.transports.serving.cli import parser

    (commands,) = [action.choices for action in parser()._actions if action.dest == "command"]
    listed = [line.split()[1] for line in block("commands").text.splitlines()]
    assert sorted(listed) == sorted(commands or ())


def test_the_list_and_call_transcript_is_what_they_print() -> None:
    """Each ``$ command`` line of the block, run, prints the lines that follow it."""
    transcript = block("list-call").text
    for command, expected in re.findall(r"^\$ (.+)\n((?:(?!\$ ).*\n)*)", transcript, flags=re.M):
        done = _sh(command)
        assert done.returncode == 0, done.stderr
        assert done.stdout == expected, command


def _with_readme_paths(text: str) -> str:
    """What ``wiremcp install`` wrote or printed, with this machine's paths as the README shows them."""
    python = re.escape(str(BIN)) + r"/python[0-9.]*"
    return re.sub(python, "/home/you/project/.venv/bin/python", text).replace(str(ROOT), "/home/you/project")


def test_the_host_entry_is_what_install_json_prints() -> None:
    printed = _sh("wiremcp install json examples/word_count.py")
    assert printed.returncode == 0, printed.stderr
    assert _with_readme_paths(printed.stdout) == block("host-entry").text


@pytest.mark.parametrize(("host", "name"), [("claude-desktop", "claude-desktop-config"), ("vscode", "vscode-config")])
def test_the_host_configurations_are_what_install_writes(host: str, name: str, tmp_path: Path) -> None:
    written = _sh(f"wiremcp install {host} examples/word_count.py --config {tmp_path / 'config.json'}")
    assert written.returncode == 0, written.stderr
    assert json.loads(_with_readme_paths((tmp_path / "config.json").read_text())) == json.loads(block(name).text)


# -- what a handler can do, and testing it -------------------------------------------------------------------
async def test_the_handler_example_books_a_table() -> None:
    namespace: dict[str, Any] = {"__name__": "readme_handler"}
    exec(compile(block("handler").text, "README.md", "exec"), namespace)
    server = namespace["server"]
    assert isinstance(server, MCPServer)
    asked: list[Any] = []

    async def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["message"])
        return {"action": "accept", "content": {"date": "Friday", "seats": 2}}

    async def sampling(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params["messages"][0]["content"]["text"])
        return {"role": "assistant", "content": {"type": "text", "text": "Booked for two on Friday."},
                "model": "test"}

    async with Client(server, elicitation=elicitation, sampling=sampling) as client:
        result = await client.call_tool("book", {"venue": "Luigi's"})
    assert result["content"][0]["text"] == "Booked for two on Friday."
    assert asked == ["When, and how many?", "Write a one-line confirmation for date='Friday' seats=2"]


def _exec_as_file(name: str, path: Path) -> dict[str, Any]:
    """A README block run as the file ``path`` (its ``__file__``), as the reader would save it."""
    path.write_text(block(name).text)
    namespace: dict[str, Any] = {"__name__": f"readme_{name}", "__file__": str(path)}
    exec(compile(block(name).text, str(path), "exec"), namespace)
    return namespace


async def test_the_skills_example_serves_a_folder_of_skills_and_one_made_in_code(tmp_path: Path) -> None:
    (tmp_path / "skills" / "acme" / "refunds").mkdir(parents=True)
    (tmp_path / "skills" / "acme" / "refunds" / "SKILL.md").write_text(
        "---\nname: refunds\ndescription: Refund orders per policy.\n---\nRefund in full within 30 days.\n")
    server = _exec_as_file("skills", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        listed = await client.request("skills/list", {})
        template = await client.read_resource("skill://team/release-notes/template.md")
    assert [s["uri"] for s in listed["skills"]] == ["skill://acme/refunds/SKILL.md", "skill://team/release-notes/SKILL.md"]
    assert template["contents"][0]["text"] == "## {version}\n\n- {change} ({issue})\n"


async def test_the_apps_example_names_its_view_and_serves_it(tmp_path: Path) -> None:
    (tmp_path / "view.html").write_text("<!DOCTYPE html><p>weather</p>")
    server = _exec_as_file("apps", tmp_path / "server.py")["server"]
    server.check()
    host = {"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}}
    async with Client(server, capabilities=host) as client:
        tools = {t["name"]: t for t in await client.list_tools()}
        view = await client.read_resource("ui://weather/view.html")
        shown = await client.call_tool("forecast", {"city": "Oslo"})
    assert tools["forecast"]["_meta"]["ui"] == {"resourceUri": "ui://weather/view.html"}
    assert tools["refresh"]["_meta"]["ui"]["visibility"] == ["app"]
    assert view["contents"][0]["mimeType"] == "text/html;profile=mcp-app"
    assert view["contents"][0]["_meta"]["ui"] == {"csp": {"connectDomains": ["https://api.weather.example"]},
                                                  "prefersBorder": True}
    assert shown["structuredContent"] == {"city": "Oslo", "high": 21.5, "summary": "sunny"}


async def test_the_middleware_example_rewrites_filters_redacts_and_logs(tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    server = _exec_as_file("middleware", tmp_path / "server.py")["server"]
    await check_middleware_example(server, caplog)


async def test_the_rate_limits_example_refuses_the_sixth_reindex_with_retry_after(tmp_path: Path) -> None:
    server = _exec_as_file("rate-limits", tmp_path / "server.py")["server"]
    await check_rate_limits_example(server)


async def test_the_mount_example_serves_the_child_under_its_prefix(tmp_path: Path) -> None:
    server = _exec_as_file("mount", tmp_path / "server.py")["server"]
    await check_mount_example(server)


async def test_the_backend_example_keeps_the_sessions_it_serves_in_its_rows(tmp_path: Path) -> None:
    namespace = _exec_as_file("backend", tmp_path / "server.py")
    sessions, app = namespace["sessions"], namespace["app"]
    async with asgi_client(app) as client:
        session = await raw.initialize(client, "/mcp")
        assert await session.call("ping") == {}
        assert list(sessions.rows) == [session.sid]
        assert sessions.rows[session.sid]["ready"] is True  # saved after notifications/initialized
        assert (await client.delete("/mcp", headers={"mcp-session-id": session.sid})).status_code == 200
        assert sessions.rows == {}
    await app.manager.close()


def test_the_testing_example_passes_in_a_project_of_ones_own(tmp_path: Path) -> None:
    """Saved as the user would save it, next to the server with the README's pytest settings, and run by pytest
    with none of ours: it passes, and without a warning."""
    run = run_pytest(tmp_path, {"server.py": block("server").text, "test_server.py": block("testing").text,
                                "pyproject.toml": block("testing-config").text}, ENV)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout, run.stdout
    assert "warning" not in (run.stdout + run.stderr).lower(), run.stdout + run.stderr


def test_the_request_state_key_command_makes_a_key_the_server_takes() -> None:
    command = block("request-state-keys").text.strip()
    assert command.startswith("export WIREMCP_REQUEST_STATE_KEYS=$(")
    made = _sh(f"{command}; echo \"$WIREMCP_REQUEST_STATE_KEYS\"")
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    assert len(base64.urlsafe_b64decode(key)) == 32
    from wiremcp.request_state import RequestStateSealer

    RequestStateSealer.from_strings((key,))  # accepted


# -- auth ------------------------------------------------------------------------------------------------------
def test_the_auth_environment_serves_metadata_and_challenges() -> None:
    port = free_port()
    command = " ".join(block("auth-env").text.replace("\\\n", " ").split())
    command = command.replace("--host 0.0.0.0", f"--host 127.0.0.1 --port {port}")
    with background(command) as process:
        accepting(process, port)
        base = f"http://127.0.0.1:{port}"
        metadata = httpx.get(f"{base}/.well-known/oauth-protected-resource/mcp",
                             headers={"host": "mcp.example.com"}, timeout=10)
        refused = initialize(f"{base}/mcp", host="mcp.example.com")
    assert metadata.status_code == 200, metadata.text
    assert metadata.json()["resource"] == "https://mcp.example.com/mcp"
    assert metadata.json()["authorization_servers"] == ["https://login.example.com"]
    assert refused.status_code == 401
    assert "resource_metadata=" in refused.headers["www-authenticate"]


async def test_the_mounted_auth_example_serves_metadata_and_challenges() -> None:
    from examples.word_count import server

    namespace: dict[str, Any] = {"__name__": "readme_mount", "server": server}
    exec(compile(block("auth-mount").text, "README.md", "exec"), namespace)
    transport = httpx.ASGITransport(app=namespace["app"])
    async with httpx.AsyncClient(transport=transport, base_url="https://example.com") as http:
        metadata = await http.get("/.well-known/oauth-protected-resource/api/mcp")
        refused = await http.post("/api/mcp", json={}, headers={"accept": ACCEPT_BOTH})
    assert metadata.status_code == 200, metadata.text
    assert metadata.json()["resource"] == "https://example.com/api/mcp"
    assert refused.status_code == 401


def test_the_development_authorization_flow_gets_a_token_the_server_takes() -> None:
    if shutil.which("curl") is None:
        missing("no curl on PATH for the README's development authorization flow (Debian: apt-get install curl)")
    lines = [line for line in block("dev-auth").text.splitlines() if line and not line.startswith("#")]
    auth_port, mcp_port = free_port(), free_port()

    def ported(line: str) -> str:
        return line.replace("9000", str(auth_port)).replace("8000", str(mcp_port))

    start_as, start_mcp, register, token = (ported(line) for line in [lines[0], lines[1] + " " + lines[2], *lines[3:]])
    start_mcp = start_mcp.replace("\\ ", " ") + f" --port {mcp_port}"
    assert start_as.endswith(" &")
    with background(start_as.removesuffix(" &")) as auth_server, background(start_mcp) as mcp:
        accepting(auth_server, auth_port)
        accepting(mcp, mcp_port)
        registered = _sh(register)
        assert registered.returncode == 0, registered.stderr
        client = json.loads(registered.stdout)
        minted = _sh(token.replace("CLIENT_ID", client["client_id"]).replace("CLIENT_SECRET", client["client_secret"]))
        assert minted.returncode == 0, minted.stderr
        access_token = json.loads(minted.stdout)["access_token"]
        answer = initialize(f"http://127.0.0.1:{mcp_port}/mcp", authorization=f"Bearer {access_token}")
        refused = initialize(f"http://127.0.0.1:{mcp_port}/mcp")
    assert answer.status_code == 200, answer.text
    assert refused.status_code == 401


# -- the rest ---------------------------------------------------------------------------------------------------
def test_the_layout_names_what_is_there() -> None:
    for line in block("layout").text.splitlines():
        if line.startswith(" "):
            continue
        entry = line.split()[0]
        assert (ROOT / entry).exists(), entry


def test_the_metrics_table_and_help_list_every_request_outcome() -> None:
    row = next(line for line in README.read_text().splitlines() if line.startswith("| `wiremcp_requests_total`"))
    assert re.findall(r"`(\w+)`", row.split("`outcome`")[1].split(")")[0]) == list(OUTCOMES)
    from wiremcp.transports.observability.metrics import Metrics

    exposed = Metrics().render()[0].decode()
    help_text = next(line for line in exposed.splitlines() if line.startswith("# HELP wiremcp_requests_total"))
    assert all(outcome in help_text for outcome in OUTCOMES), help_text


# -- the architecture walks ------------------------------------------------------------------------------------
def _hops(name: str) -> list[str]:
    return [line.split()[0] for line in block(name).text.splitlines() if line.strip()]


async def _followed(name: str) -> list[str]:
    if name == "walk-http-handshake":
        return await walks.http_handshake_call()
    if name == "walk-http-stateless":
        return await walks.http_stateless_call()
    if name == "walk-stdio":
        return await walks.stdio_line()
    asked, answered = await walks.http_elicitation()
    return asked if name == "walk-elicitation-asked" else answered


WALKS = ["walk-http-handshake", "walk-http-stateless", "walk-stdio", "walk-elicitation-asked",
         "walk-elicitation-answered"]


@pytest.mark.parametrize("name", WALKS)
async def test_each_architecture_walk_is_the_path_a_real_request_takes(name: str) -> None:
    """Every hop names a function that exists; no module is entered twice on a walk (hops in a row may run in one
    module); and a real request of the kind runs every hop's function, in the walk's order (of first calls)."""
    hops = _hops(name)
    for hop in hops:
        module, _, qualname = hop.partition(":")
        target: object = importlib.import_module(module)
        for part in qualname.split("."):
            target = getattr(target, part)
        assert callable(target), hop
    entered = [module for i, module in enumerate(m.partition(":")[0] for m in hops)
               if i == 0 or hops[i - 1].partition(":")[0] != module]  # hops in a row in one module: one entry
    assert len(entered) == len(set(entered)), f"a module is entered twice: {entered}"
    followed = await _followed(name)
    missing = [hop for hop in hops if hop not in followed]
    assert not missing, f"not on the path of a real request: {missing}"
    positions = [followed.index(hop) for hop in hops]
    assert positions == sorted(positions), [hops[i] for i in range(len(hops)) if positions[i] != sorted(positions)[i]]
