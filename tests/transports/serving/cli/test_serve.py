"""``wiremcp stdio|http|dev`` and ``--version`` as processes: a file spec served from any working directory,
``--reload``, the Inspector started on the server, and a user's mistake as one line with exit status 2."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.command_line import run_main
from tests.support.http import free_port, run_wiremcp_http, stop_process
from wiremcp.transports.serving.cli import package_version

BOUND = 20.0
SERVER = '''
from wiremcp import MCPServer

server = MCPServer("greeter", "1.0.0")


@server.tool()
def greet(name: str) -> str:
    """Greet someone."""
    return f"hello, {name}"
'''


def wiremcp(*args: str) -> list[str]:
    return [sys.executable, "-m", "wiremcp", *args]


def env(**extra: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("WIREMCP_") and k != "PYTHONPATH"}
    return {**clean, "PYTHONDONTWRITEBYTECODE": "1", **extra}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "server.py").write_text(SERVER)
    (tmp_path / "broken.py").write_text("from wiremcp import MCPServer\nserver = MCPServer('b')\n@server.tool()\n"
                                        "def broken(*args: str) -> str:\n    return ''\n")
    return tmp_path


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, done
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("wiremcp: error: ")]
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_stdio_serves_a_file_from_the_root_directory(project: Path) -> None:
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "greet", "arguments": {"name": "Ada"}}},
    ]
    done = subprocess.run(wiremcp("stdio", str(project / "server.py")), cwd="/", env=env(), timeout=BOUND,
                          input="".join(json.dumps(line) + "\n" for line in lines), capture_output=True, text=True)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 2], done.stderr
    assert answers[1]["result"]["content"][0]["text"] == "hello, Ada"


def test_version() -> None:
    done = subprocess.run(wiremcp("--version"), capture_output=True, text=True, timeout=BOUND, env=env())
    assert done.stdout.strip() == f"wiremcp {package_version()}"
    assert package_version()[0].isdigit()


@pytest.mark.parametrize(("argv", "extra", "expected"), [
    (["stdio", "nothere.py"], {}, "nothere.py: no such file"),
    (["stdio", "no_such_module:server"], {}, "no module named 'no_such_module'"),
    (["stdio", "broken.py"], {}, "broken.py:3: tool broken: *args and **kwargs cannot be described by a schema"),
    (["http", "server.py"], {"WIREMCP_LOG_LEVEL": "LOUD"}, "WIREMCP_LOG_LEVEL must be one of"),
    (["http", "server.py"], {"WIREMCP_MAX_SESSIONS": "many"}, "WIREMCP_MAX_SESSIONS must be an integer"),
    (["http", "server.py"], {"WIREMCP_AUTH_JWKS_URL": "http://x/jwks"}, "WIREMCP_AUTH_RESOURCE"),
    (["stdio", "server.py"], {"WIREMCP_REQUEST_STATE_KEYS": "short"}, "WIREMCP_REQUEST_STATE_KEYS"),
    (["http", "--", "no-such-program", "--flag"], {}, "wiremcp http --: cannot run no-such-program: it is not a "
                                                     "program on PATH"),
    (["http", "--"], {}, "give the command of the stdio server to serve after --"),
    (["http", "server.py", "--", "ls"], {}, "serves a SPEC or a command after --, not both"),
    (["list", "server.py", "--", "ls"], {}, "wiremcp list takes no command after --"),
])
def test_a_mistake_is_one_line_and_exit_2(project: Path, argv: list[str], extra: dict[str, str],
                                           expected: str) -> None:
    if argv[0] == "stdio":  # it takes this process's stdin and stdout: a process of its own
        done = subprocess.run(wiremcp(*argv), cwd=project, env=env(**extra), capture_output=True, text=True,
                              timeout=BOUND, stdin=subprocess.DEVNULL)
    else:  # it fails before serving anything: in this process, to spare the suite a start-up
        done = run_main(argv, project, env(**extra))
    assert expected in one_error_line(done)


def test_the_asgi_app_refuses_a_bad_setting_in_one_line(project: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "uvicorn", "wiremcp:asgi", "--port", str(free_port())],
                          cwd=project, env=env(WIREMCP_SERVER="server:server", WIREMCP_LOG_FORMAT="xml"),
                          capture_output=True, text=True, timeout=BOUND)
    assert "WIREMCP_LOG_FORMAT must be one of text, json, got 'xml'" in one_error_line(done)


def test_server_run_serves_stdio(project: Path) -> None:
    (project / "run_me.py").write_text(SERVER + "\nserver.run()\n")
    request = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}}
    done = subprocess.run([sys.executable, "run_me.py"], cwd=project, env=env(), input=json.dumps(request) + "\n",
                          capture_output=True, text=True, timeout=BOUND)
    assert json.loads(done.stdout)["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "greeter"


def test_server_run_serves_http_under_the_name_fastmcp_and_the_official_sdk_give_it(project: Path) -> None:
    port = free_port()
    (project / "run_me.py").write_text(SERVER + f"\nserver.run(transport='streamable-http', port={port})\n")
    process = subprocess.Popen([sys.executable, "run_me.py"], cwd=project, env=env(), stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert _until(lambda: _tools(f"http://127.0.0.1:{port}/mcp") or process.poll() is not None,
                      "the server answers") == ["greet"], process.stderr.read() if process.stderr else ""
    finally:
        stop_process(process)


def _tools(url: str) -> list[str] | None:
    """The tool names the server at ``url`` lists (stateless era), or None while it does not answer."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    try:
        answer = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}},
                            headers={"accept": "application/json, text/event-stream", "mcp-protocol-version": "2026-07-28",
                                     "mcp-method": "tools/list"}, timeout=2)
    except httpx.TransportError:
        return None
    result: dict[str, Any] = answer.json()["result"]
    return [tool["name"] for tool in result["tools"]]


def _until(condition: Any, what: str) -> Any:
    deadline = time.monotonic() + BOUND
    while (value := condition()) is None or value is False:
        assert time.monotonic() < deadline, f"{what} within {BOUND}s"
        time.sleep(0.05)  # the poll interval of a bounded wait
    return value


def test_http_reload_picks_up_a_changed_file(project: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    proc = subprocess.Popen(wiremcp("http", "server.py", "--port", str(port), "--reload"), cwd=project, env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert _until(lambda: _tools(url), "the server answers") == ["greet"]
        changed = project / "server.py"
        changed.write_text(SERVER + '\n\n@server.tool()\ndef wave() -> str:\n    return "o/"\n')
        touched = [time.monotonic()]

        def reloaded() -> bool:
            if (_tools(url) or []) == ["greet", "wave"]:
                return True
            if time.monotonic() - touched[0] > 2:  # the reloader may take its first look after the server answers
                os.utime(changed)
                touched[0] = time.monotonic()
            return False

        _until(reloaded, "the reloaded server lists the new tool")
    finally:
        stop_process(proc)


def test_dev_starts_the_inspector_on_the_server(project: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """With a stand-in ``npx`` that records how it was started: the Inspector gets this interpreter serving the
    spec on stdio, and the WIREMCP_* settings (it starts servers with a minimal environment)."""
    bin_dir = tmp_path_factory.mktemp("bin")
    record = bin_dir / "argv.json"
    npx = bin_dir / "npx"
    npx.write_text(f"#!{sys.executable}\nimport json, sys\nopen({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\n")
    npx.chmod(npx.stat().st_mode | stat.S_IXUSR)
    done = subprocess.run(wiremcp("dev", "server.py"), cwd=project, capture_output=True, text=True, timeout=BOUND,
                          env=env(PATH=str(bin_dir), WIREMCP_LOG_LEVEL="DEBUG"))
    assert done.returncode == 0, done.stderr
    assert json.loads(record.read_text()) == [
        "-y", "@modelcontextprotocol/inspector", "-e", "WIREMCP_LOG_LEVEL=DEBUG", "--",
        sys.executable, "-m", "wiremcp", "stdio", str(project / "server.py")]


STAND_IN_INSPECTOR = """
import json, os, subprocess, sys, time
record = {record!r}
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])  # as the Inspector's node servers
with open(record + ".tmp", "w") as out:
    json.dump({{"argv": sys.argv[1:], "host": os.environ.get("HOST"), "pids": [os.getpid(), child.pid]}}, out)
os.replace(record + ".tmp", record)
time.sleep(600)
"""


def _running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (a zombie waiting for its parent has)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


@pytest.mark.parametrize(("stop", "extra"), [(signal.SIGTERM, []), (signal.SIGINT, ["--host", "0.0.0.0"])],
                         ids=["sigterm", "ctrl-c-and-host"])
def test_dev_keeps_the_inspector_on_loopback_and_stopping_it_stops_every_process_it_started(
        project: Path, tmp_path_factory: pytest.TempPathFactory, stop: signal.Signals, extra: list[str]) -> None:
    """A stand-in ``npx`` that starts a child of its own (as the Inspector's node processes do) and records the
    ``HOST`` it was given: loopback unless ``--host`` widens it; stopping ``wiremcp dev`` (SIGTERM, or Ctrl-C)
    ends the stand-in and its child."""
    bin_dir = tmp_path_factory.mktemp("bin")
    record = bin_dir / "started.json"
    npx = bin_dir / "npx"
    npx.write_text(f"#!{sys.executable}\n" + STAND_IN_INSPECTOR.format(record=str(record)))
    npx.chmod(npx.stat().st_mode | stat.S_IXUSR)
    dev = subprocess.Popen(wiremcp("dev", "server.py", *extra), cwd=project, env=env(PATH=str(bin_dir)),
                           stderr=subprocess.PIPE)
    try:
        _until(record.exists, "the stand-in Inspector started its child")
        started = json.loads(record.read_text())
        assert started["host"] == ("0.0.0.0" if extra else "127.0.0.1"), started
        assert all(_running(pid) for pid in started["pids"]), started
        dev.send_signal(stop)
        code = dev.wait(BOUND)
        assert not any(_running(pid) for pid in started["pids"]), started
        assert code == 130, code  # as after Ctrl-C
        assert b"Traceback" not in (dev.stderr.read() if dev.stderr else b""), code
    finally:
        stop_process(dev)


def test_dev_without_node_says_what_is_missing(project: Path, tmp_path: Path) -> None:
    done = subprocess.run(wiremcp("dev", "server.py"), cwd=project, capture_output=True, text=True, timeout=BOUND,
                          env=env(PATH=str(tmp_path / "empty")))
    assert "npx, which is not on PATH: install Node.js" in one_error_line(done)


@pytest.mark.parametrize(("extra", "path"), [({}, "/mcp"), ({"WIREMCP_PATH": "/tools/mcp"}, "/tools/mcp")])
def test_http_says_the_url_a_host_is_given(extra: dict[str, str], path: str) -> None:
    """The startup line names the MCP endpoint (with its path), not the bare origin."""
    with run_wiremcp_http("tests.support.http_fixture_server:server", {"WIREMCP_LOG_LEVEL": "INFO", **extra}) as served:
        line = f"Uvicorn running on http://127.0.0.1:{served.port}{path} (Press CTRL+C to quit)"
        _until(lambda: line in served.output(), "the startup line")
        assert httpx.post(served.base_url + path, json={}, headers={"accept": "application/json"}).status_code != 404
