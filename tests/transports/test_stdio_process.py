"""``wiremcp stdio`` as a process, on whatever its stdin and stdout are: ``/dev/null`` (``docker run``
without ``-i``, systemd's ``StandardInput=null``, CI), regular files (``< requests.txt > out.txt``), a
terminal; and a server module that prints, reads stdin and runs child processes, at import time and
in its tools, without ever touching the wire.

Every process is bounded by ``BOUND`` (a failure bound, not a measurement); nothing sleeps.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEST_SERVER = "tests.support.stdio_server:server"
WORD_COUNT = "examples.word_count:server"
STDIO = "2025-11-25/basic/transports#stdio"
BOUND = 20.0

pytestmark = pytest.mark.spec(STDIO)


def _wiremcp() -> list[str]:
    """The ``wiremcp`` console script, as a user runs it (``python -m wiremcp`` if it is not installed)."""
    script = Path(sys.executable).with_name("wiremcp")
    return [str(script)] if script.exists() else [sys.executable, "-m", "wiremcp"]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WIREMCP_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # a piped script's tool calls may outlast the default drain on a loaded machine
    env["WIREMCP_STDIO_DRAIN_SECONDS"] = str(BOUND)
    return {**env, **extra}


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _initialize(rid: int = 1) -> bytes:
    params = {"protocolVersion": "2025-11-25", "capabilities": {},
              "clientInfo": {"name": "test_stdio_process", "version": "0"}}
    return (_line({"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params})
            + _line({"jsonrpc": "2.0", "method": "notifications/initialized"}))


def _call(rid: int, tool: str, arguments: dict[str, Any] | None = None) -> bytes:
    return _line({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                  "params": {"name": tool, "arguments": arguments or {}}})


def _wire(stdout: bytes) -> dict[Any, dict[str, Any]]:
    """Every stdout line must be one JSON-RPC message; returns the responses by id."""
    answers: dict[Any, dict[str, Any]] = {}
    for line in stdout.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            pytest.fail(f"stdout carried a line that is not JSON-RPC: {line!r}")
        assert isinstance(message, dict), line
        assert message.get("jsonrpc") == "2.0", line
        if "id" in message and "method" not in message:
            answers[message["id"]] = message
    return answers


def _text(answer: dict[str, Any]) -> str:
    assert "result" in answer, answer
    assert not answer["result"].get("isError"), answer
    return str(answer["result"]["content"][0]["text"])


def _assert_clean(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "Error" not in stderr, stderr


# -- what stdin and stdout are ------------------------------------------------------------------

def test_stdin_from_dev_null_exits_at_once_and_cleanly() -> None:
    done = subprocess.run([*_wiremcp(), "stdio", WORD_COUNT], cwd=ROOT, env=_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=BOUND)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""
    _assert_clean(done.stderr.decode())


def test_requests_from_a_file_are_answered_into_a_file(tmp_path: Path) -> None:
    requests = tmp_path / "requests.txt"
    requests.write_bytes(_initialize() + _call(2, "word_count", {"text": "read the wire"}))
    out = tmp_path / "out.txt"
    with requests.open("rb") as stdin, out.open("wb") as stdout:
        done = subprocess.run([*_wiremcp(), "stdio", WORD_COUNT], cwd=ROOT, env=_env(), stdin=stdin, stdout=stdout,
                              stderr=subprocess.PIPE, timeout=BOUND)
    assert done.returncode == 0, done.stderr.decode()
    _assert_clean(done.stderr.decode())
    answers = _wire(out.read_bytes())
    assert answers[1]["result"]["serverInfo"]["name"] == "word_count"
    assert answers[2]["result"]["structuredContent"] == {"words": 3, "chars": 13}


def test_stdout_to_dev_null_still_serves(tmp_path: Path) -> None:
    requests = tmp_path / "requests.txt"
    requests.write_bytes(_initialize() + _call(2, "noisy"))
    with requests.open("rb") as stdin:
        done = subprocess.run([*_wiremcp(), "stdio", TEST_SERVER], cwd=ROOT, env=_env(), stdin=stdin,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=BOUND)
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert "noisy: child process" in stderr, stderr  # the tool ran


def test_a_terminal_on_stdin_is_served() -> None:
    """A person typing at a terminal: lines are answered as they come, Ctrl-D ends the session."""
    try:
        terminal, stdin = pty.openpty()
    except OSError as exc:
        pytest.skip(f"no pseudo-terminal here: {exc}")
    with subprocess.Popen([*_wiremcp(), "stdio", WORD_COUNT], cwd=ROOT, env=_env(), stdin=stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        os.close(stdin)
        try:
            assert proc.stdout is not None
            os.write(terminal, _initialize())
            ready, _, _ = select.select([proc.stdout], [], [], BOUND)
            assert ready, "no answer to a line typed at the terminal"
            answer = json.loads(proc.stdout.readline())
            assert answer["id"] == 1
            assert answer["result"]["serverInfo"]["name"] == "word_count"
            os.write(terminal, b"\x04")  # Ctrl-D at the start of a line: end of input
            _, stderr = proc.communicate(timeout=BOUND)
        finally:
            os.close(terminal)
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0, stderr.decode()
    assert "Traceback" not in stderr.decode(), stderr.decode()


# -- stdout is the wire, from the first byte ----------------------------------------------------

NOISY_MODULE = '''
    """Prints, writes to fd 1, reads stdin and runs child processes at import time and in a tool."""
    import os
    import subprocess
    import sys

    from wiremcp import MCPServer

    print("import: print")
    sys.stdout.flush()
    os.write(1, b"import: fd 1\\n")
    subprocess.run(["echo", "import: child process"], check=True)
    READ_AT_IMPORT = sys.stdin.read()

    server = MCPServer("noisy-module", "1.0.0")


    @server.tool()
    def noisy() -> str:
        print("tool: print")
        sys.stdout.flush()
        subprocess.run(["echo", "tool: child process"], check=True)
        child = subprocess.run(["cat"], stdout=subprocess.PIPE, check=True)  # reads the stdin it inherits
        return f"stdin at import: {READ_AT_IMPORT!r}; a child read: {child.stdout!r}"
'''

NOISY_ANSWER = "stdin at import: ''; a child read: b''"
NOISY_OUTPUT = ("import: print", "import: fd 1", "import: child process", "tool: print", "tool: child process")


def test_prints_reads_and_child_processes_of_the_server_module_never_touch_the_wire(tmp_path: Path) -> None:
    (tmp_path / "noisy_module.py").write_text(textwrap.dedent(NOISY_MODULE))
    script = _initialize() + _call(2, "noisy") + _line({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    done = subprocess.run([*_wiremcp(), "stdio", "noisy_module:server"], cwd=tmp_path, env=_env(), input=script,
                          capture_output=True, timeout=BOUND)
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    answers = _wire(done.stdout)
    assert sorted(answers) == [1, 2, 3], (done.stdout, stderr)
    assert _text(answers[2]) == NOISY_ANSWER
    assert answers[3]["result"] == {}
    for text in NOISY_OUTPUT:
        assert text in stderr, f"{text!r} is missing from stderr:\n{stderr}"


USER_SCRIPT = '''
    """A user's own entry point: ``serve_stdio(server)``, with no file descriptors given."""
    import asyncio
    import subprocess

    from wiremcp import MCPServer
    from wiremcp.transports.stdio import serve_stdio

    server = MCPServer("own-main", "1.0.0")


    @server.tool()
    def noisy() -> str:
        print("tool: print")
        subprocess.run(["echo", "tool: child process"], check=True)
        return "done"


    asyncio.run(serve_stdio(server, drain_seconds=20))
'''


def test_serve_stdio_called_without_fds_serves_the_process_stdio(tmp_path: Path) -> None:
    (tmp_path / "own_main.py").write_text(textwrap.dedent(USER_SCRIPT))
    done = subprocess.run([sys.executable, "own_main.py"], cwd=tmp_path, env=_env(),
                          input=_initialize() + _call(2, "noisy"), capture_output=True, timeout=BOUND)
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    answers = _wire(done.stdout)
    assert _text(answers[2]) == "done"
    assert "tool: print" in stderr
    assert "tool: child process" in stderr
