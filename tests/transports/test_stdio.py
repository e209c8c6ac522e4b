"""``wiremcp.transports.stdio``: the stdio transport, driven through a real ``wiremcp stdio`` process the
way clients use it (and, for tasks, ``serve_stdio`` on pipes in this process).

- Wire fixtures (``tests/fixtures/stdio/*.txt``, format in the README there), of both eras: client lines
  in, exact server lines out, run in lock step and again piped all at once.
- Behaviour tests against ``tests.support.stdio_server``: concurrency, cancellation, shutdown, stdout
  hygiene, framing.
- The process on whatever its stdin and stdout are: ``/dev/null`` (``docker run`` without ``-i``,
  systemd's ``StandardInput=null``, CI), regular files (``< requests.txt > out.txt``), a terminal; and a
  server module that prints, reads stdin and runs child processes, at import time and in its tools,
  without ever touching the wire.
- Tasks: a task still running when the one client goes away (EOF) is failed, saying why.
- The stateless era (2026-07-28): what a wire fixture cannot express: echoing the opaque ``requestState``
  of one round into the next, and ``subscriptions/listen`` streams, whose notifications interleave with
  other answers; absence is proven by ordering (a later message on the same stream), never by waiting.

Nothing sleeps to wait for something. Every read has a timeout, and a timeout is a failure
bound, not a measurement (so is ``BOUND`` for a whole process, and ``EXIT_BOUND`` for a process to be gone
after stdin EOF or SIGTERM). The spec asks a stdio server to exit promptly on stdin EOF: what the shutdown
tests prove is that the process exits by itself, and where they also mean "without waiting for X" (a
blocking tool, the drain), X is configured to last ``OUTLASTS_EXIT``, longer than ``EXIT_BOUND``, so an
exit within the bound cannot have waited for it; no test measures how fast an exit is.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import select
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.stdio import (
    EXIT_BOUND,
    INIT_PARAMS,
    Spawn,
    StdioProcess,
    parse_wire_line,
)
from wiremcp import MCPServer
from wiremcp.protocol import (
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_SERVER_INFO,
    META_SUBSCRIPTION,
    META_VERSION,
)
from wiremcp.shutdown import CUT_OFF
from wiremcp.task_runner import SHUT_DOWN
from wiremcp.transports.stdio import serve_stdio
from wiremcp.types import JSONObject

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "stdio"
STDIO = "2025-11-25/basic/transports#stdio"
ANY = "<any>"

# -- wire fixtures ------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Step:
    client: bool
    text: str
    lineno: int


@dataclass(frozen=True, slots=True)
class Script:
    path: Path
    server: str
    specs: tuple[str, ...]
    steps: tuple[Step, ...]

    def where(self, step: Step) -> str:
        return f"{self.path.relative_to(ROOT)}:{step.lineno}"


def load_script(path: Path) -> Script:
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or not lines[0].startswith("# server: "):
        raise ValueError(f"{path}: the first line must be '# server: MODULE:ATTR'")
    specs: list[str] = []
    steps: list[Step] = []
    for lineno, line in enumerate(lines[1:], start=2):
        if line.startswith("# spec: "):
            specs.append(line.removeprefix("# spec: ").strip())
        elif not line.strip() or line.startswith("#"):
            continue
        elif line.startswith("> "):
            steps.append(Step(True, line[2:], lineno))
        elif line.startswith("< "):
            json.loads(line[2:])  # an expected line must itself be JSON
            steps.append(Step(False, line[2:], lineno))
        else:
            raise ValueError(f"{path}:{lineno}: a line must start with '> ', '< ' or '#'")
    return Script(path, lines[0].removeprefix("# server: ").strip(), tuple(specs), tuple(steps))


def matches(expected: Any, actual: Any) -> bool:
    """JSON equality where the string ``"<any>"`` in ``expected`` matches any value."""
    if expected == ANY:
        return True
    if isinstance(expected, dict):
        return (isinstance(actual, dict) and expected.keys() == actual.keys()
                and all(matches(value, actual[key]) for key, value in expected.items()))
    if isinstance(expected, list):
        return (isinstance(actual, list) and len(expected) == len(actual)
                and all(matches(e, a) for e, a in zip(expected, actual, strict=True)))
    return type(expected) is type(actual) and bool(expected == actual)


def same_items(expected: list[Any], actual: list[Any], match: Callable[[Any, Any], bool]) -> bool:
    """``expected`` and ``actual`` hold matching items, in any order."""
    if len(expected) != len(actual):
        return False
    remaining = list(actual)
    for item in expected:
        index = next((i for i, candidate in enumerate(remaining) if match(item, candidate)), None)
        if index is None:
            return False
        del remaining[index]
    return True


def matches_message(expected: Any, actual: Any) -> bool:
    """One wire line; a batch response's elements may come in any order (JSON-RPC 2.0 §6)."""
    if isinstance(expected, list) and isinstance(actual, list):
        return same_items(expected, actual, matches)
    return matches(expected, actual)


SCRIPTS = sorted(FIXTURES.glob("*.txt"))


def _script_params() -> list[Any]:
    params = []
    for path in SCRIPTS:
        script = load_script(path)
        params.append(pytest.param(script, id=path.stem, marks=[pytest.mark.spec(ref) for ref in script.specs]))
    return params


def test_fixture_scenarios_are_all_there() -> None:
    names = {path.stem for path in SCRIPTS}
    required = {"word_count", "version_unsupported", "version_2025_06_18", "version_2025_03_26",
                "before_initialize", "malformed_json", "invalid_request", "unknown_method", "server_discover",
                "batch_2025_11_25", "batch_2025_03_26", "notifications"}
    assert required <= names, f"missing fixtures: {sorted(required - names)}"
    for path in SCRIPTS:
        script = load_script(path)
        assert any(not step.client for step in script.steps), f"{path.name} expects no output at all"


@pytest.mark.parametrize("script", _script_params())
async def test_wire_fixture(script: Script, spawn: Spawn) -> None:
    """Lock step: write the client lines up to each expected block, then read exactly that block."""
    server = await spawn(script.server)
    for step in script.steps:
        if step.client:
            await server.write(step.text.encode() + b"\n")
            continue
        raw = await server.read_line()
        actual = parse_wire_line(raw)
        assert matches_message(json.loads(step.text), actual), (
            f"{script.where(step)}\nexpected: {step.text}\n     got: {raw.decode().rstrip()}")
    await server.close_stdin()
    extra = await server.stdout_to_eof()
    assert extra == [], f"{script.path.name}: unexpected output after the last expected line: {extra!r}"
    assert await server.wait_exit() == 0


@pytest.mark.parametrize("script", _script_params())
async def test_wire_fixture_piped(script: Script, spawn: Spawn) -> None:
    """``cat script | wiremcp stdio SERVER``: every answer arrives before the process exits on EOF.

    Requests run concurrently, so the order of answers is not fixed here; the lock-step
    test checks it.
    """
    server = await spawn(script.server, console_script=True)
    await server.write(b"".join(step.text.encode() + b"\n" for step in script.steps if step.client))
    await server.close_stdin()
    raw = await server.stdout_to_eof()
    assert await server.wait_exit() == 0
    actual = [parse_wire_line(line) for line in raw]
    expected = [json.loads(step.text) for step in script.steps if not step.client]
    assert same_items(expected, actual, matches_message), (
        f"{script.path.name}\nexpected (any order):\n" + "\n".join(json.dumps(e) for e in expected)
        + "\ngot:\n" + b"".join(raw).decode())


# -- concurrency and cancellation ---------------------------------------------------------------

def _text(response: dict[str, Any]) -> str:
    content = response["result"]["content"]
    assert isinstance(content, list), response
    assert content[0]["type"] == "text", response
    text = content[0]["text"]
    assert isinstance(text, str)
    return text


@pytest.mark.spec(STDIO)
async def test_slow_async_tool_does_not_delay_ping(spawn: Spawn) -> None:
    server = await spawn()
    await server.initialize()
    await server.call_tool(1, "slow")
    started = await server.notification("notifications/message")
    assert started["params"]["data"] == "slow: started"
    await server.request(2, "ping")
    assert await server.response(2) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    # the slow call is still pending: only now is it released, and only then does it answer
    await server.call_tool(3, "release")
    answers: dict[int, dict[str, Any]] = {}
    for _ in range(2):
        message = await server.recv()
        answers[message["id"]] = message
    assert set(answers) == {1, 3}
    assert _text(answers[1]) == "slow: done"


@pytest.mark.spec(STDIO)
async def test_blocking_sync_tool_does_not_delay_ping(spawn: Spawn) -> None:
    server = await spawn()
    await server.initialize()
    await server.call_tool(1, "blocking", {"seconds": 60})
    await server.wait_stderr("blocking: started")
    await server.request(2, "ping")
    assert await server.response(2) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    await server.call_tool(3, "echo", {"text": "still serving"})
    assert _text(await server.response(3)) == "still serving"


async def test_a_sync_tool_left_unmarked_that_blocks_is_moved_to_a_worker_after_its_first_call(spawn: Spawn) -> None:
    server = await spawn()
    await server.initialize()
    await server.call_tool(1, "unmarked", {"seconds": 0.05})  # held the event loop: 50 ms
    assert _text(await server.response(1)) == "unmarked: done"
    await server.wait_stderr("tool 'unmarked' held the event loop for ")
    await server.call_tool(2, "unmarked", {"seconds": 60})  # on a worker thread now ...
    await server.wait_stderr("unmarked: started 60")
    await server.request(3, "ping")  # ... so the server answers meanwhile
    assert await server.response(3) == {"jsonrpc": "2.0", "id": 3, "result": {}}


@pytest.mark.spec("2025-11-25/basic/utilities/cancellation#cancellation-flow")
async def test_cancelled_slow_tool_stops_and_never_answers(spawn: Spawn) -> None:
    server = await spawn()
    await server.initialize()
    await server.call_tool(1, "slow")
    await server.notification("notifications/message")
    await server.notify("notifications/cancelled", {"requestId": 1, "reason": "changed my mind"})
    await server.wait_stderr("slow: cancelled")
    await server.request(2, "ping")
    assert await server.response(2) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    # releasing the event now must not resurrect the cancelled call
    await server.call_tool(3, "release")
    assert _text(await server.response(3)) == "released"
    await server.close_stdin()
    rest = [parse_wire_line(line) for line in await server.stdout_to_eof()]
    assert all(message.get("id") != 1 for message in rest), rest
    assert await server.wait_exit() == 0


@pytest.mark.spec("2025-11-25/basic/utilities/cancellation#cancellation-flow")
async def test_cancelled_blocking_tool_never_answers(spawn: Spawn) -> None:
    """A thread cannot be interrupted: the call is abandoned and its late result dropped."""
    server = await spawn()
    await server.initialize()
    await server.call_tool(1, "blocking", {"seconds": 0.3})
    await server.wait_stderr("blocking: started")
    await server.notify("notifications/cancelled", {"requestId": 1})
    await server.request(2, "ping")
    assert await server.response(2) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    await server.wait_stderr("blocking: finished")
    await server.request(3, "ping")
    assert await server.response(3) == {"jsonrpc": "2.0", "id": 3, "result": {}}
    await server.close_stdin()
    rest = [parse_wire_line(line) for line in await server.stdout_to_eof()]
    assert rest == []
    assert await server.wait_exit() == 0


# -- shutdown ------------------------------------------------------------------------------------

OUTLASTS_EXIT = 3 * EXIT_BOUND
"""How long what an exit must not wait for lasts (a ``blocking`` tool, a drain): longer than ``EXIT_BOUND``, so
a process gone within that bound did not wait for it."""


def _cut_off(request_id: int) -> dict[str, Any]:
    """The answer of a call the shutdown cut off (``wiremcp.shutdown.CUT_OFF``, retryable)."""
    return {"jsonrpc": "2.0", "id": request_id,
            "error": {"code": -32603, "message": CUT_OFF, "data": {"replica": None, "retryable": True}}}


async def _start_busy(spawn: Spawn, tool: str, env: dict[str, str] | None = None) -> StdioProcess:
    """A server with ``tool`` running and known to be running (``slow`` until released, which no shutdown
    test does; ``blocking`` for ``OUTLASTS_EXIT`` seconds)."""
    server = await spawn(env=env)
    await server.initialize()
    if tool == "slow":
        await server.call_tool(1, "slow")
        await server.notification("notifications/message")
    else:
        await server.call_tool(1, "blocking", {"seconds": OUTLASTS_EXIT})
        await server.wait_stderr("blocking: started")
    return server


@pytest.mark.spec(STDIO)
@pytest.mark.spec("2025-11-25/basic/lifecycle#stdio")
@pytest.mark.parametrize("tool", ["slow", "blocking"])
async def test_stdin_eof_exits_promptly_with_a_tool_running(spawn: Spawn, tool: str) -> None:
    """The tool would outlast ``EXIT_BOUND``: the process exits by itself after the (default) drain, without
    waiting for it; a coroutine is cancelled, a blocked thread abandoned; the call is answered with the
    shutdown's retryable error, not a result."""
    server = await _start_busy(spawn, tool)
    await server.close_stdin()
    assert await server.wait_exit(EXIT_BOUND) == 0
    rest = [parse_wire_line(line) for line in await server.stdout_to_eof()]
    assert rest == [_cut_off(1)], f"the interrupted call was not answered as cut off: {rest}"
    if tool == "slow":
        assert "slow: cancelled" in await server.stderr_to_eof()


@pytest.mark.spec("2025-11-25/basic/lifecycle#stdio")
@pytest.mark.parametrize("tool", ["slow", "blocking"])
async def test_sigterm_exits_promptly_with_a_tool_running(spawn: Spawn, tool: str) -> None:
    """SIGTERM cancels at once: with a drain longer than ``EXIT_BOUND`` configured, an exit within the bound
    shows that SIGTERM does not drain (nor wait for the tool, which outlasts it too)."""
    server = await _start_busy(spawn, tool, env={"WIREMCP_STDIO_DRAIN_SECONDS": str(OUTLASTS_EXIT)})
    server.proc.send_signal(signal.SIGTERM)  # stdin stays open
    code = await server.wait_exit(EXIT_BOUND)
    assert code in (0, -signal.SIGTERM), code
    rest = [parse_wire_line(line) for line in await server.stdout_to_eof()]
    assert rest == [_cut_off(1)], f"the interrupted call was not answered as cut off: {rest}"
    assert "Traceback" not in await server.stderr_to_eof()


# -- stdout is the wire --------------------------------------------------------------------------

@pytest.mark.spec(STDIO)
async def test_print_and_child_process_output_go_to_stderr(spawn: Spawn) -> None:
    server = await spawn()
    await server.initialize()
    await server.call_tool(1, "noisy")
    assert _text(await server.response(1)) == "noisy: done"
    await server.request(2, "ping")
    assert await server.response(2) == {"jsonrpc": "2.0", "id": 2, "result": {}}
    await server.close_stdin()
    rest = await server.stdout_to_eof()
    for line in rest:
        parse_wire_line(line)
    assert await server.wait_exit() == 0
    stderr = await server.stderr_to_eof()
    for text in ("noisy: print", "noisy: sys.__stdout__", "noisy: fd 1", "noisy: child process"):
        assert text in stderr, f"{text!r} is missing from stderr:\n{stderr}"


@pytest.mark.spec(STDIO)
@pytest.mark.spec("2025-11-25/server/utilities/logging#log-message-notifications")
async def test_logs_go_to_stderr_and_mcp_logs_to_the_wire(spawn: Spawn) -> None:
    server = await spawn()
    await server.initialize()
    await server.call_tool(1, "logs")
    note = await server.notification("notifications/message")
    assert note["params"] == {"level": "warning", "data": "logs: mcp logging"}
    assert _text(await server.response(1)) == "logs: done"
    await server.wait_stderr("logs: python logging")
    assert not any("logs: mcp logging" in line for line in server.stderr_lines)


# -- framing -------------------------------------------------------------------------------------

def _echo_line(rid: int, text: str) -> bytes:
    message = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}}
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


def _echo_line_of_size(rid: int, size: int) -> tuple[bytes, str]:
    """An echo request exactly ``size`` bytes long, and its text."""
    text = "x" * (size - len(_echo_line(rid, "")))
    line = _echo_line(rid, text)
    assert len(line) == size
    return line, text


@pytest.mark.spec(STDIO)
async def test_oversized_line_gets_an_error_and_the_server_keeps_serving(spawn: Spawn) -> None:
    limit = 4096
    server = await spawn(env={"WIREMCP_MAX_MESSAGE_BYTES": str(limit)})
    await server.initialize()
    too_long = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": ANY}}
    # just over the limit, in one write
    await server.write(_echo_line_of_size(1, limit + 1)[0] + b"\n")
    assert matches(too_long, await server.recv())
    # exactly at the limit is fine
    line, text = _echo_line_of_size(2, limit)
    await server.write(line + b"\n")
    assert _text(await server.response(2)) == text
    # far over the limit and over several reads, with a good request right behind it in the same write
    await server.write(_echo_line(3, "y" * (1 << 18)) + b"\n" + _echo_line(4, "after") + b"\n")
    assert matches(too_long, await server.recv())
    assert _text(await server.response(4)) == "after"
    await server.request(5, "ping")
    assert await server.response(5) == {"jsonrpc": "2.0", "id": 5, "result": {}}


@pytest.mark.spec(STDIO)
async def test_message_split_across_writes_is_reassembled(spawn: Spawn) -> None:
    server = await spawn()
    await server.initialize()
    text = "naïve café, 日本語 ✓"
    line = _echo_line(2, text)
    split = line.index("é".encode()) + 1  # in the middle of a multi-byte UTF-8 character
    # the ping's answer proves the server has read the first write (and so the first half) alone
    await server.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n' + line[:split])
    assert await server.response(1) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    await server.write(line[split:] + b"\n")
    assert _text(await server.response(2)) == text
    # and a message dribbled in one byte per write
    for byte in _echo_line(3, "dribble") + b"\n":
        await server.write(bytes([byte]))
    assert _text(await server.response(3)) == "dribble"


@pytest.mark.spec(STDIO)
async def test_large_message_round_trips(spawn: Spawn) -> None:
    """2 MiB each way, under the default 4 MiB limit: many reads in, many writes out."""
    server = await spawn()
    await server.initialize()
    text = "0123456789abcdef" * (1 << 17)
    await server.write(_echo_line(1, text) + b"\n")
    assert _text(await server.response(1)) == text


@pytest.mark.spec(STDIO)
async def test_many_pipelined_requests_all_get_answers(spawn: Spawn) -> None:
    """More requests than may run at once (1,024): reading slows down, nothing is refused."""
    server = await spawn()
    await server.initialize()
    count = 3000
    lines = []
    for rid in range(1, count + 1):
        if rid % 2:
            lines.append(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "ping"}).encode())
        else:
            lines.append(_echo_line(rid, f"echo {rid}"))
    await server.write(b"\n".join(lines) + b"\n")
    answers: dict[int, dict[str, Any]] = {}
    for _ in range(count):
        message = await server.recv()
        assert message["id"] not in answers, f"answered twice: {message}"
        answers[message["id"]] = message
    assert set(answers) == set(range(1, count + 1))
    for rid, message in answers.items():
        if rid % 2:
            assert message["result"] == {}, message
        else:
            assert _text(message) == f"echo {rid}"


@pytest.mark.spec(STDIO)
async def test_crlf_line_endings_and_blank_lines_are_accepted(spawn: Spawn) -> None:
    server = await spawn()
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT_PARAMS}
    await server.write(json.dumps(init).encode() + b"\r\n\r\n   \r\n")
    assert (await server.response(1))["result"]["protocolVersion"] == "2025-11-25"
    await server.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\r\n')
    await server.write(_echo_line(2, "crlf") + b"\r\n")
    assert _text(await server.response(2)) == "crlf"
    await server.write(b'{"jsonrpc":"2.0","id":3,"method":"ping"}\r\n')
    assert await server.response(3) == {"jsonrpc": "2.0", "id": 3, "result": {}}


@pytest.mark.spec(STDIO)
async def test_invalid_utf8_is_a_parse_error(spawn: Spawn) -> None:
    server = await spawn()
    await server.initialize()
    await server.write(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\xff\xfe"}}\n')
    assert matches({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": ANY}}, await server.recv())
    await server.request(2, "ping")
    assert await server.response(2) == {"jsonrpc": "2.0", "id": 2, "result": {}}


# == the process, on whatever its stdin and stdout are ==================================================

TEST_SERVER = "tests.support.stdio_server:server"
WORD_COUNT = "examples.word_count:server"
BOUND = 20.0


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


def _answer_text(answer: dict[str, Any]) -> str:
    assert "result" in answer, answer
    assert not answer["result"].get("isError"), answer
    return str(answer["result"]["content"][0]["text"])


def _assert_clean(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "Error" not in stderr, stderr


# -- what stdin and stdout are ------------------------------------------------------------------

@pytest.mark.spec(STDIO)
def test_stdin_from_dev_null_exits_at_once_and_cleanly() -> None:
    done = subprocess.run([*_wiremcp(), "stdio", WORD_COUNT], cwd=ROOT, env=_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=BOUND)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == b""
    _assert_clean(done.stderr.decode())


@pytest.mark.spec(STDIO)
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


@pytest.mark.spec(STDIO)
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


@pytest.mark.spec(STDIO)
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


@pytest.mark.spec(STDIO)
def test_prints_reads_and_child_processes_of_the_server_module_never_touch_the_wire(tmp_path: Path) -> None:
    (tmp_path / "noisy_module.py").write_text(textwrap.dedent(NOISY_MODULE))
    script = _initialize() + _call(2, "noisy") + _line({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    done = subprocess.run([*_wiremcp(), "stdio", "noisy_module:server"], cwd=tmp_path, env=_env(), input=script,
                          capture_output=True, timeout=BOUND)
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    answers = _wire(done.stdout)
    assert sorted(answers) == [1, 2, 3], (done.stdout, stderr)
    assert _answer_text(answers[2]) == NOISY_ANSWER
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


@pytest.mark.spec(STDIO)
def test_serve_stdio_called_without_fds_serves_the_process_stdio(tmp_path: Path) -> None:
    (tmp_path / "own_main.py").write_text(textwrap.dedent(USER_SCRIPT))
    done = subprocess.run([sys.executable, "own_main.py"], cwd=tmp_path, env=_env(),
                          input=_initialize() + _call(2, "noisy"), capture_output=True, timeout=BOUND)
    stderr = done.stderr.decode()
    assert done.returncode == 0, stderr
    answers = _wire(done.stdout)
    assert _answer_text(answers[2]) == "done"
    assert "tool: print" in stderr
    assert "tool: child process" in stderr


# == tasks, in process (serve_stdio on pipes) ===========================================================

@pytest.mark.timeout(30)
@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
async def test_at_eof_a_running_task_is_failed_and_its_handler_stopped() -> None:
    server = MCPServer("stdio-tasks", "1.0.0")
    cancelled = asyncio.Event()

    @server.tool(task_support="optional")
    async def forever() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "forever", "arguments": {}, "task": {}}},
    ]
    os.write(stdin_w, "".join(json.dumps(line) + "\n" for line in lines).encode())
    os.close(stdin_w)  # EOF after the three messages
    try:
        # a drain long enough for the request that creates the task to be answered, however loaded the
        # machine; the task itself is not drained, so serving ends within the bound, far shorter than the drain
        async with asyncio.timeout(EXIT_BOUND):
            await serve_stdio(server, stdin_fd=stdin_r, stdout_fd=stdout_w, drain_seconds=OUTLASTS_EXIT)
    finally:
        os.close(stdin_r)
        os.close(stdout_w)
    with os.fdopen(stdout_r) as out:
        answers = [json.loads(line) for line in out.read().splitlines()]
    created = next(a for a in answers if a.get("id") == 2)
    task_id = created["result"]["task"]["taskId"]
    assert cancelled.is_set()
    record = await server.runtime.task_runner.store.get(task_id, None)
    assert record is not None
    assert record.status == "failed"
    assert record.status_message == SHUT_DOWN


# == the stateless era (2026-07-28) =====================================================================

EVERYTHING = "examples.everything:server"
VERSION = "2026-07-28"
SERVER_INFO = {"name": "wiremcp-everything", "version": "1.0.0", "title": "wiremcp everything"}
ELICITATION: JSONObject = {"elicitation": {"form": {}}}

MRTR = "2026-07-28/basic/patterns/mrtr"
SUBSCRIPTIONS = "2026-07-28/basic/patterns/subscriptions"
STATELESS_STDIO = "2026-07-28/basic/transports/stdio"


def _meta(capabilities: JSONObject | None = None) -> JSONObject:
    """The per-request fields of the stateless era."""
    return {META_VERSION: VERSION, META_CAPABILITIES: capabilities or {},
            META_CLIENT_INFO: {"name": "test_stdio_stateless", "version": "0"}}


def _is_request(message: JSONObject) -> bool:
    return "method" in message and "id" in message


class Stateless:
    """A stateless-era client on one stdio process. It records every message the server writes and
    fails on the first JSON-RPC request: the server must never send one in this era."""

    def __init__(self, proc: StdioProcess) -> None:
        self.proc = proc
        self.seen: list[JSONObject] = []

    async def recv(self) -> JSONObject:
        message = await self.proc.recv()
        assert isinstance(message, dict), f"expected one message, got {message!r}"
        assert not _is_request(message), f"the server wrote a request in the stateless era: {message}"
        self.seen.append(message)
        return message

    async def send(self, rid: int | str, method: str, params: JSONObject | None = None, *,
                   capabilities: JSONObject | None = None) -> None:
        params = dict(params or {})
        params["_meta"] = {**_meta(capabilities), **params.get("_meta", {})}
        await self.proc.request(rid, method, params)

    async def response(self, rid: int | str) -> JSONObject:
        """The response to ``rid``; notifications before it are recorded (in ``seen``) and skipped."""
        while True:
            message = await self.recv()
            if "method" not in message:
                assert message.get("id") == rid, f"expected the response to {rid!r}, got {message}"
                return message

    async def call(self, rid: int | str, name: str, arguments: JSONObject | None = None, *,
                   capabilities: JSONObject | None = None, **params: Any) -> JSONObject:
        await self.send(rid, "tools/call", {"name": name, "arguments": arguments or {}, **params},
                        capabilities=capabilities)
        return await self.response(rid)

    async def until(self, done: Callable[[list[JSONObject]], bool]) -> list[JSONObject]:
        """Read until ``done`` holds for the messages read by this call; return them."""
        got: list[JSONObject] = []
        while not done(got):
            got.append(await self.recv())
        return got

    async def finish(self) -> list[JSONObject]:
        """Close stdin: every remaining line up to EOF (none may be a request), and a clean exit."""
        await self.proc.close_stdin()
        rest = [parse_wire_line(line) for line in await self.proc.stdout_to_eof()]
        for message in rest:
            assert isinstance(message, dict), message
            assert not _is_request(message), f"the server wrote a request in the stateless era: {message}"
        assert await self.proc.wait_exit() == 0
        return rest


async def _start(spawn: Spawn, server: str = EVERYTHING, *, debug: bool = False,
                 env: dict[str, str] | None = None) -> Stateless:
    """``debug``: asyncio debug mode, where touching the event loop from another thread raises (the
    trigger tools are sync: they run on worker threads and publish their changes from there)."""
    return Stateless(await spawn(server, env={**({"PYTHONASYNCIODEBUG": "1"} if debug else {}), **(env or {})}))


def _result(response: JSONObject) -> JSONObject:
    assert "result" in response, response
    result: JSONObject = response["result"]
    return result


def _stateless_text(response: JSONObject) -> str:
    result = _result(response)
    assert result["resultType"] == "complete", result
    text: str = result["content"][0]["text"]
    return text


def _input_required(response: JSONObject) -> tuple[JSONObject, str]:
    """The ``inputRequests`` and the sealed ``requestState`` of an InputRequiredResult."""
    result = _result(response)
    assert result["resultType"] == "input_required", result
    assert not {"ttlMs", "cacheScope"} & result.keys(), "input_required results are not cacheable"
    assert result["_meta"][META_SERVER_INFO] == SERVER_INFO
    state = result["requestState"]
    assert isinstance(state, str)
    assert state
    requests: JSONObject = result["inputRequests"]
    return requests, state


def _tagged(message: JSONObject, method: str, subscription: int | str) -> bool:
    params = message.get("params")
    return (message.get("method") == method and isinstance(params, dict)
            and params.get("_meta", {}).get(META_SUBSCRIPTION) == subscription)


def _subscription_of(message: JSONObject) -> Any:
    """The subscriptionId a notification or response carries, if any."""
    body = message.get("params", message.get("result"))
    meta = body.get("_meta") if isinstance(body, dict) else None
    return meta.get(META_SUBSCRIPTION) if isinstance(meta, dict) else None


def _count(messages: list[JSONObject], method: str, subscription: int | str) -> int:
    return sum(_tagged(m, method, subscription) for m in messages)


def _answered(messages: list[JSONObject], rid: int | str) -> bool:
    return any(m.get("id") == rid and "method" not in m for m in messages)


# -- multi round-trip requests ---------------------------------------------------------------------

@pytest.mark.spec(f"{MRTR}#basic-workflow")
@pytest.mark.spec(f"{MRTR}#client-requirements-basic-workflow")
@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
@pytest.mark.spec(f"{STATELESS_STDIO}#receiving-messages")
async def test_input_required_round_trip_echoes_the_opaque_request_state(spawn: Spawn) -> None:
    server = await _start(spawn)
    requests, state = _input_required(await server.call(1, "test_input_required_result_request_state",
                                                        capabilities=ELICITATION))
    assert list(requests) == ["confirm"]
    assert requests["confirm"]["method"] == "elicitation/create"
    assert requests["confirm"]["params"]["mode"] == "form"
    answers = {"confirm": {"action": "accept", "content": {"ok": True}}}

    # the retry is a new request (new id) with the answers and the exact state echoed
    done = await server.call(2, "test_input_required_result_request_state", capabilities=ELICITATION,
                             inputResponses=answers, requestState=state)
    assert _stateless_text(done) == "state-ok: confirmation received"
    assert _result(done)["_meta"] == {META_SERVER_INFO: SERVER_INFO}

    # without the state the handler's own state does not come back, so it asks again
    _input_required(await server.call(3, "test_input_required_result_request_state", capabilities=ELICITATION,
                                      inputResponses=answers))

    # a state is attacker-controlled: altered, or presented on another request, it is refused
    middle = len(state) // 2  # a character that carries six bits of the sealed bytes
    tampered = state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1:]
    refused = await server.call(4, "test_input_required_result_request_state", capabilities=ELICITATION,
                                inputResponses=answers, requestState=tampered)
    assert refused["error"]["code"] == -32602, refused
    elsewhere = await server.call(5, "test_input_required_result_tampered_state", capabilities=ELICITATION,
                                  inputResponses=answers, requestState=state)
    assert elsewhere["error"]["code"] == -32602, elsewhere
    assert "another request" in elsewhere["error"]["message"]
    await server.finish()


@pytest.mark.spec(f"{MRTR}#basic-workflow")
@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
async def test_ctx_elicit_replays_across_rounds_with_earlier_answers_from_the_state(spawn: Spawn) -> None:
    """Each ``ctx.elicit`` is one round; the third round brings only the newest answer."""
    server = await _start(spawn)
    name = "test_input_required_result_multi_round"
    first, state1 = _input_required(await server.call(1, name, capabilities=ELICITATION))
    assert list(first) == ["elicitation-1"]
    assert first["elicitation-1"]["params"]["message"] == "Step 1: What is your name?"

    second, state2 = _input_required(await server.call(
        2, name, capabilities=ELICITATION, requestState=state1,
        inputResponses={"elicitation-1": {"action": "accept", "content": {"name": "Ada"}}}))
    assert list(second) == ["elicitation-2"]
    assert second["elicitation-2"]["params"]["message"] == "Step 2: What is your favorite color?"
    assert state2 != state1

    done = await server.call(3, name, capabilities=ELICITATION, requestState=state2,
                             inputResponses={"elicitation-2": {"action": "accept", "content": {"color": "teal"}}})
    assert _stateless_text(done) == "Ada likes teal."
    await server.finish()


@pytest.mark.spec(f"{STATELESS_STDIO}#receiving-messages")
@pytest.mark.spec("2026-07-28/basic/patterns/mrtr#multi-round-trip-requests")
async def test_the_server_never_writes_a_request_in_the_stateless_era(spawn: Spawn) -> None:
    """Handlers that ask the client (high level and low level, every kind of input) get InputRequiredResults."""
    server = await _start(spawn)
    everything: JSONObject = {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}
    asks = [
        ("test_elicitation", {"message": "Who are you?"}, "elicitation/create"),
        ("test_sampling", {"prompt": "Hi"}, "sampling/createMessage"),
        ("test_input_required_result_list_roots", {}, "roots/list"),
        ("test_input_required_result_sampling", {}, "sampling/createMessage"),
    ]
    for rid, (tool, arguments, method) in enumerate(asks, start=1):
        requests, _state = _input_required(await server.call(rid, tool, arguments, capabilities=everything))
        assert [r["method"] for r in requests.values()] == [method], tool
    # progress before the input point is a notification related to the request; the question is in the result
    await server.send(9, "tools/call", {"name": "test_streaming_elicitation", "arguments": {},
                                        "_meta": {"progressToken": "p9"}}, capabilities=everything)
    progress = await server.recv()
    assert progress == {"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": "p9", "progress": 0, "total": 2}}
    requests, _state = _input_required(await server.response(9))
    assert [r["method"] for r in requests.values()] == ["elicitation/create"]
    await server.finish()
    assert not any(_is_request(m) for m in server.seen)


@pytest.mark.spec("2026-07-28/basic/versioning#backward-compatibility-with-initialization-based-versions")
@pytest.mark.spec(f"{STATELESS_STDIO}#receiving-messages")
@pytest.mark.spec("2026-07-28/basic/index#statelessness")
async def test_each_era_asks_for_input_its_own_way_on_one_process(spawn: Spawn) -> None:
    """After initialize (which declared elicitation) a stateless request still declares its own capabilities
    and gets its questions in the result; the handshake-era call gets a real elicitation/create request."""
    proc = await spawn(EVERYTHING)
    await proc.request(0, "initialize", {**INIT_PARAMS, "capabilities": {"elicitation": {}}})
    assert _result(await proc.response(0))["protocolVersion"] == "2025-11-25"
    await proc.notify("notifications/initialized")
    server = Stateless(proc)

    missing = await server.call(1, "test_input_required_result_multi_round")  # _meta declares nothing
    assert missing["error"]["code"] == -32021, missing
    assert missing["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}
    requests, _state = _input_required(await server.call(2, "test_input_required_result_multi_round",
                                                         capabilities=ELICITATION))
    assert list(requests) == ["elicitation-1"]

    # the handshake era on the same process: the server asks with a request of its own
    await proc.call_tool(3, "test_elicitation", {"message": "Who are you?"})
    asked = await proc.recv()
    assert asked["method"] == "elicitation/create", asked
    assert "id" in asked, asked
    await proc.send({"jsonrpc": "2.0", "id": asked["id"],
                     "result": {"action": "accept", "content": {"response": "ada"}}})
    answer = await proc.response(3)
    assert answer["result"] == {"content": [{"type": "text", "text": "User response: action=accept, response=ada"}]}
    await server.finish()


# -- subscriptions/listen ----------------------------------------------------------------------------

@pytest.mark.spec(f"{SUBSCRIPTIONS}#acknowledgment")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#notification-filter")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#receiving-notifications")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#multiple-concurrent-subscriptions")
@pytest.mark.spec(f"{STATELESS_STDIO}#receiving-messages")
async def test_listen_acknowledges_first_then_forwards_tagged_changes(spawn: Spawn) -> None:
    server = await _start(spawn, debug=True)
    await server.send("tools-sub", "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    ack = await server.recv()
    assert ack == {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                   "params": {"_meta": {META_SUBSCRIPTION: "tools-sub"}, "notifications": {"toolsListChanged": True}}}
    # a second, concurrent subscription, with an integer id, for prompts only
    await server.send(7, "subscriptions/listen", {"notifications": {"promptsListChanged": True,
                                                                    "toolsListChanged": False}})
    ack = await server.recv()
    assert ack["method"] == "notifications/subscriptions/acknowledged", ack
    assert ack["params"] == {"_meta": {META_SUBSCRIPTION: 7}, "notifications": {"promptsListChanged": True}}

    # while both are open, other requests are answered (before any initialize, too)
    await server.proc.request(1, "ping")
    assert await server.response(1) == {"jsonrpc": "2.0", "id": 1, "result": {}}

    # a prompt change reaches only subscription 7
    await server.send(2, "tools/call", {"name": "test_trigger_prompt_change", "arguments": {}})
    got = await server.until(lambda m: _answered(m, 2) and _count(m, "notifications/prompts/list_changed", 7) == 2)
    assert _stateless_text(next(m for m in got if m.get("id") == 2)) == "prompt list changed"
    # a tool change reaches only "tools-sub"; each queue is in order, so had "tools-sub" taken the prompt
    # changes they would have come before these
    await server.send(3, "tools/call", {"name": "test_trigger_tool_change", "arguments": {}})
    got += await server.until(lambda m: _answered(m, 3)
                              and _count(m, "notifications/tools/list_changed", "tools-sub") == 2)
    notes = [m for m in got if "id" not in m]
    assert len(notes) == 4, notes  # nothing untagged, nothing twice
    for note in notes:
        assert set(note["params"]) == {"_meta"}, note
    assert _count(got, "notifications/prompts/list_changed", "tools-sub") == 0
    assert _count(got, "notifications/tools/list_changed", 7) == 0

    # stdin EOF: the server ends both streams gracefully, each response tagged with its subscription
    rest = await server.finish()
    assert sorted(rest, key=lambda m: str(m["id"])) == [
        {"jsonrpc": "2.0", "id": 7, "result": {
            "resultType": "complete", "_meta": {META_SUBSCRIPTION: 7, META_SERVER_INFO: SERVER_INFO}}},
        {"jsonrpc": "2.0", "id": "tools-sub", "result": {
            "resultType": "complete", "_meta": {META_SUBSCRIPTION: "tools-sub", META_SERVER_INFO: SERVER_INFO}}},
    ]


@pytest.mark.spec(f"{SUBSCRIPTIONS}#cancellation")
@pytest.mark.spec(f"{STATELESS_STDIO}#cancellation")
@pytest.mark.spec("2026-07-28/basic/patterns/cancellation#behavior-requirements")
async def test_cancelled_listen_ends_without_a_response(spawn: Spawn) -> None:
    server = await _start(spawn, debug=True)
    listen = {"notifications": {"toolsListChanged": True}}
    await server.send("a", "subscriptions/listen", listen)
    await server.send("b", "subscriptions/listen", listen)
    acks = await server.until(lambda m: len(m) == 2)
    assert {a["params"]["_meta"][META_SUBSCRIPTION] for a in acks} == {"a", "b"}
    assert all(a["method"] == "notifications/subscriptions/acknowledged" for a in acks)

    await server.proc.notify("notifications/cancelled", {"requestId": "a", "reason": "done listening"})
    await server.send(1, "tools/call", {"name": "test_trigger_tool_change", "arguments": {}})
    got = await server.until(lambda m: _answered(m, 1) and _count(m, "notifications/tools/list_changed", "b") == 2)
    assert _count(got, "notifications/tools/list_changed", "a") == 0
    # nothing more for "a", not even at the end, when the other stream ends gracefully
    rest = await server.finish()
    assert [m["id"] for m in rest] == ["b"], rest
    assert [m for m in got + rest if m.get("id") == "a" or _subscription_of(m) == "a"] == []


@pytest.mark.spec(f"{STATELESS_STDIO}#shutdown")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#graceful-closure")
async def test_stdin_eof_with_a_listen_open_exits_promptly(spawn: Spawn) -> None:
    """An open listen stream never ends by itself, yet it is ended first, not drained: with a drain longer
    than ``EXIT_BOUND`` configured, the process is gone within the bound all the same."""
    server = await _start(spawn, env={"WIREMCP_STDIO_DRAIN_SECONDS": str(OUTLASTS_EXIT)})
    await server.send(1, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    ack = await server.recv()
    assert ack["method"] == "notifications/subscriptions/acknowledged", ack
    await server.proc.close_stdin()
    assert await server.proc.wait_exit(EXIT_BOUND) == 0
    rest = [parse_wire_line(line) for line in await server.proc.stdout_to_eof()]
    assert rest == [{"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "complete", "_meta": {META_SUBSCRIPTION: 1, META_SERVER_INFO: SERVER_INFO}}}]
