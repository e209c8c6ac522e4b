"""A real ``wiremcp stdio`` process driven line by line: ``StdioProcess``, the ``spawn`` fixture that starts
them (from the repository root) and reaps them, and the check that a stdout line is one JSON-RPC message."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Protocol

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEST_SERVER = "tests.support.stdio_server:server"

READ_BOUND = 10.0
"""Failure bound for one expected line (or for stdout to reach EOF); generous, for loaded machines."""
EXIT_BOUND = 20.0
"""Failure bound for the process to be gone by itself after stdin EOF or SIGTERM; generous, for loaded
machines. A test that also means "without waiting for X" makes X (a drain, a blocking tool) last longer
than this by configuration, so that an exit within the bound cannot have waited for it."""
STREAM_LIMIT = 1 << 24

INIT_PARAMS = {"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "test_stdio", "version": "0"}}



class StdioProcess:
    """One ``wiremcp stdio`` process: write lines to its stdin, read lines from its stdout."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        assert proc.stdin is not None
        assert proc.stdout is not None
        assert proc.stderr is not None
        self.proc = proc
        self.stdin = proc.stdin
        self.stdout = proc.stdout
        self.stderr_lines: list[str] = []
        self.notifications: list[dict[str, Any]] = []
        self._stderr_changed = asyncio.Condition()
        self._stderr_task = asyncio.create_task(self._collect_stderr(proc.stderr))

    async def _collect_stderr(self, stream: asyncio.StreamReader) -> None:
        async for raw in stream:
            async with self._stderr_changed:
                self.stderr_lines.append(raw.decode("utf-8", "replace").rstrip("\n"))
                self._stderr_changed.notify_all()

    @property
    def stderr_text(self) -> str:
        return "\n".join(self.stderr_lines)

    # writing
    async def write(self, data: bytes) -> None:
        self.stdin.write(data)
        await self.stdin.drain()

    async def send(self, message: Any) -> None:
        await self.write(json.dumps(message).encode() + b"\n")

    async def request(self, rid: int | str, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def call_tool(self, rid: int | str, name: str, arguments: dict[str, Any] | None = None) -> None:
        await self.request(rid, "tools/call", {"name": name, "arguments": arguments or {}})

    async def close_stdin(self) -> None:
        self.stdin.close()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await self.stdin.wait_closed()

    # reading
    async def read_line(self, bound: float = READ_BOUND) -> bytes:
        """The next raw stdout line; fails on timeout or EOF."""
        try:
            line = await asyncio.wait_for(self.stdout.readline(), bound)
        except TimeoutError:
            pytest.fail(f"no line on stdout within {bound}s\nstderr:\n{self.stderr_text}")
        if not line:
            pytest.fail(f"stdout closed while a line was expected\nstderr:\n{self.stderr_text}")
        assert line.endswith(b"\n"), f"a partial line before EOF: {line!r}"
        assert b"\r" not in line, f"the server must end lines with a bare newline: {line!r}"
        return line

    async def recv(self, bound: float = READ_BOUND) -> Any:
        """The next message on stdout, parsed."""
        return parse_wire_line(await self.read_line(bound))

    async def response(self, rid: int | str | None) -> dict[str, Any]:
        """The response to ``rid``: it must be the next message that is not a notification."""
        while True:
            message = await self.recv()
            assert isinstance(message, dict), f"expected one message, got {message!r}"
            if "method" in message and "id" not in message:
                self.notifications.append(message)
                continue
            assert message.get("id") == rid, f"expected the response to {rid!r}, got {message!r}"
            assert ("result" in message) != ("error" in message), message
            return message

    async def notification(self, method: str) -> dict[str, Any]:
        """The next message, which must be a notification ``method``."""
        message = await self.recv()
        assert isinstance(message, dict), f"expected a {method} notification, got {message!r}"
        assert message.get("method") == method, f"expected a {method} notification, got {message!r}"
        assert "id" not in message, f"expected a {method} notification, got {message!r}"
        self.notifications.append(message)
        return message

    async def initialize(self, version: str = "2025-11-25") -> dict[str, Any]:
        await self.request(0, "initialize", {**INIT_PARAMS, "protocolVersion": version})
        answer = await self.response(0)
        assert answer["result"]["protocolVersion"] == version, answer
        await self.notify("notifications/initialized")
        return answer

    async def stdout_to_eof(self, bound: float = READ_BOUND) -> list[bytes]:
        """Every remaining stdout line, up to EOF."""
        lines: list[bytes] = []

        async def read_all() -> None:
            while line := await self.stdout.readline():
                lines.append(line)

        try:
            await asyncio.wait_for(read_all(), bound)
        except TimeoutError:
            pytest.fail(f"stdout still open after {bound}s; read {lines!r}\nstderr:\n{self.stderr_text}")
        return lines

    async def wait_stderr(self, text: str, bound: float = READ_BOUND) -> None:
        """Wait until a stderr line contains ``text``."""

        async def seen() -> None:
            async with self._stderr_changed:
                await self._stderr_changed.wait_for(lambda: any(text in line for line in self.stderr_lines))

        try:
            await asyncio.wait_for(seen(), bound)
        except TimeoutError:
            pytest.fail(f"{text!r} did not show up on stderr within {bound}s\nstderr:\n{self.stderr_text}")

    async def stderr_to_eof(self, bound: float = READ_BOUND) -> str:
        try:
            await asyncio.wait_for(asyncio.shield(self._stderr_task), bound)
        except TimeoutError:
            pytest.fail(f"stderr still open after {bound}s")
        return self.stderr_text

    async def wait_exit(self, bound: float = READ_BOUND) -> int:
        """The exit status; fails if the process is still running after ``bound`` seconds."""
        try:
            return await asyncio.wait_for(self.proc.wait(), bound)
        except TimeoutError:
            pytest.fail(f"the server was still running {bound}s later\nstderr:\n{self.stderr_text}")

    async def dispose(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            await self.proc.wait()
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            await asyncio.wait_for(self._stderr_task, READ_BOUND)


def parse_wire_line(line: bytes) -> Any:
    """A stdout line must be exactly one JSON-RPC message (or a batch response)."""
    try:
        message = json.loads(line)
    except ValueError:
        pytest.fail(f"stdout carried a line that is not JSON: {line!r}")
    items = message if isinstance(message, list) else [message]
    assert items, f"an empty array on the wire: {line!r}"
    for item in items:
        assert isinstance(item, dict), f"not a JSON-RPC message: {line!r}"
        assert item.get("jsonrpc") == "2.0", f"not a JSON-RPC message: {line!r}"
    return message


class Spawn(Protocol):
    async def __call__(self, server: str = ..., *, env: dict[str, str] | None = ...,
                       console_script: bool = ...) -> StdioProcess: ...


def _wiremcp_command(console_script: bool) -> list[str]:
    script = Path(sys.executable).with_name("wiremcp")
    if console_script and script.exists():
        return [str(script)]
    return [sys.executable, "-m", "wiremcp"]


@pytest.fixture
async def spawn() -> AsyncIterator[Spawn]:
    """Start ``wiremcp stdio SERVER`` from the repository root; every process is reaped afterwards."""
    started: list[StdioProcess] = []

    async def start(server: str = TEST_SERVER, *, env: dict[str, str] | None = None,
                    console_script: bool = False) -> StdioProcess:
        environ = {k: v for k, v in os.environ.items() if not k.startswith("WIREMCP_")}
        environ.update(env or {})
        proc = await asyncio.create_subprocess_exec(
            *_wiremcp_command(console_script), "stdio", server, cwd=ROOT, env=environ,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            limit=STREAM_LIMIT)
        process = StdioProcess(proc)
        started.append(process)
        return process

    yield start
    for process in started:
        await process.dispose()
