"""The stdio transport, driven through a real ``wiremcp stdio`` process the way clients use it.

Two kinds of tests:

- wire fixtures (``tests/fixtures/stdio/*.txt``, format in the README there): client lines in,
  exact server lines out, run in lock step and again piped all at once;
- behaviour tests against ``tests.support.stdio_server``: concurrency, cancellation,
  shutdown, stdout hygiene, framing.

Nothing sleeps to wait for something. Every read has a timeout, and a timeout is a failure
bound, not a measurement. The one exception is ``EXIT_BOUND``: the spec asks a stdio server
to exit promptly on stdin EOF, so the process must be gone within that time.
"""

from __future__ import annotations

import json
import signal
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

async def _start_busy(spawn: Spawn, tool: str) -> StdioProcess:
    """A server with ``tool`` running and known to be running."""
    server = await spawn()
    await server.initialize()
    if tool == "slow":
        await server.call_tool(1, "slow")
        await server.notification("notifications/message")
    else:
        await server.call_tool(1, "blocking", {"seconds": 60})
        await server.wait_stderr("blocking: started")
    return server


@pytest.mark.spec(STDIO)
@pytest.mark.spec("2025-11-25/basic/lifecycle#stdio")
@pytest.mark.parametrize("tool", ["slow", "blocking"])
async def test_stdin_eof_exits_promptly_with_a_tool_running(spawn: Spawn, tool: str) -> None:
    server = await _start_busy(spawn, tool)
    await server.close_stdin()
    assert await server.wait_exit(EXIT_BOUND) == 0
    rest = [parse_wire_line(line) for line in await server.stdout_to_eof()]
    assert all(message.get("id") != 1 for message in rest), f"the interrupted call was answered: {rest}"


@pytest.mark.spec("2025-11-25/basic/lifecycle#stdio")
@pytest.mark.parametrize("tool", ["slow", "blocking"])
async def test_sigterm_exits_promptly_with_a_tool_running(spawn: Spawn, tool: str) -> None:
    server = await _start_busy(spawn, tool)
    server.proc.send_signal(signal.SIGTERM)  # stdin stays open
    code = await server.wait_exit(EXIT_BOUND)
    assert code in (0, -signal.SIGTERM), code


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
