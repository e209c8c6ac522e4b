"""Tasks over stdio, in process (``serve_stdio`` on pipes): a task still running when the one client goes
away (EOF) is failed, saying why, and its handler stopped; stdout carries only the protocol."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from wiremcp import MCPServer
from wiremcp.task_runner import SHUT_DOWN
from wiremcp.transports.stdio import serve_stdio

pytestmark = [pytest.mark.timeout(30), pytest.mark.spec("2025-11-25/basic/utilities/tasks")]


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
        async with asyncio.timeout(10):
            await serve_stdio(server, stdin_fd=stdin_r, stdout_fd=stdout_w, drain_seconds=0.05)
    finally:
        os.close(stdin_r)
        os.close(stdout_w)
    with os.fdopen(stdout_r) as out:
        answers = [json.loads(line) for line in out.read().splitlines()]
    created = next(a for a in answers if a.get("id") == 2)
    task_id = created["result"]["task"]["taskId"]
    assert cancelled.is_set()
    record = await server.task_runner.store.get(task_id, None)
    assert record is not None
    assert record.status == "failed"
    assert record.status_message == SHUT_DOWN
