"""The server of the tasks-across-replicas tests (``WIREMCP_SERVER=tests.support.task_server:server``):
``job`` runs as a task until ``finish(name)`` or a cancellation; ``outcome(name)`` says how it ended;
``confirm`` asks the client a question (an elicitation), at once or after ``finish(name)``, and answers
with what the client said."""

from __future__ import annotations

import asyncio

from wiremcp import Context, MCPServer
from wiremcp.types import JSONObject

server = MCPServer("task-fixture", "1.0.0")

CONFIRM_SCHEMA: JSONObject = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}

_finish: dict[str, asyncio.Event] = {}
_outcomes: dict[str, asyncio.Queue[str]] = {}


def _queue(name: str) -> asyncio.Queue[str]:
    return _outcomes.setdefault(name, asyncio.Queue())


@server.tool(task_support="optional")
async def job(name: str) -> str:
    """Wait until ``finish(name)``; record how it ended."""
    try:
        await _finish.setdefault(name, asyncio.Event()).wait()
    except asyncio.CancelledError:
        _queue(name).put_nowait("cancelled")
        raise
    _queue(name).put_nowait("finished")
    return f"{name} done"


@server.tool()
def finish(name: str) -> str:
    _finish.setdefault(name, asyncio.Event()).set()
    return "ok"


@server.tool()
async def outcome(name: str) -> str:
    """Answer once ``job(name)`` has ended here: how."""
    return await _queue(name).get()


@server.tool(task_support="optional")
async def confirm(name: str, ctx: Context, after_finish: bool = False) -> str:
    """Ask the client whether to go on with ``name`` (``after_finish``: once ``finish(name)`` is called);
    say what it answered."""
    if after_finish:
        await _finish.setdefault(name, asyncio.Event()).wait()
    answer = await ctx.elicit(f"Go on with {name}?", CONFIRM_SCHEMA)
    return f"{name}: {answer.action} ok={(answer.content or {}).get('ok')}"
