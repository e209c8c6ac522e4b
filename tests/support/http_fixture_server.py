"""A server for the HTTP transport tests: ``WIREMCP_SERVER=tests.support.http_fixture_server:server``.

Long-running tools never sleep: ``stepper`` advances one step per ``release`` call, and
``release`` answers only once the step it opened has been sent, so a test knows exactly
which events exist at any moment.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

from wiremcp import Context, MCPServer, ToolError, param_header
from wiremcp.tools import Tool

FIXTURE_SERVER = f"{__name__}:server"
"""This server as a spec, for ``uvicorn app:asgi``."""
MAX_MESSAGE_BYTES = 64 * 1024
"""Its ``WIREMCP_MAX_MESSAGE_BYTES`` where it is served, small so that 413 is cheap to reach."""

server = MCPServer("http-fixture", "1.0.0", title="HTTP transport fixtures")


class _Gate:
    def __init__(self) -> None:
        self.opened: asyncio.Queue[None] = asyncio.Queue()
        self.passed: asyncio.Queue[int] = asyncio.Queue()


_gates: dict[str, _Gate] = {}


def _gate(name: str) -> _Gate:
    gate = _gates.get(name)
    if gate is None:
        gate = _gates[name] = _Gate()
    return gate


@server.tool()
def echo(text: str) -> str:
    """Answer at once (application/json)."""
    return text


@server.tool()
async def chatty(count: int, ctx: Context) -> str:
    """Send ``count`` log messages, then answer (an SSE stream)."""
    for i in range(count):
        await ctx.info(f"message {i}")
    return f"sent {count}"


@server.tool()
async def burst(name: str, count: int, ctx: Context) -> str:
    """Send one message (the answer becomes a stream); at ``release(name)``, ``count`` more without yielding."""
    gate = _gate(name)
    await ctx.info("first")
    await gate.opened.get()
    for i in range(count):
        await ctx.info(f"burst {i}")
    gate.passed.put_nowait(count)
    return f"burst of {count} sent"


@server.tool()
async def stepper(name: str, steps: int, ctx: Context) -> str:
    """Report progress 0 at once, then one more step per ``release(name)``; answer after the last."""
    gate = _gate(name)
    await ctx.report_progress(0, steps, "started")
    for step in range(1, steps + 1):
        await gate.opened.get()
        await ctx.report_progress(step, steps, f"step {step}")
        gate.passed.put_nowait(step)
    return f"{name}: {steps} steps done"


@server.tool()
async def hold(name: str) -> str:
    """Wait, silently, until ``release(name)``; then answer."""
    gate = _gate(name)
    await gate.opened.get()
    gate.passed.put_nowait(1)
    return f"{name}: released"


@server.tool()
async def release(name: str) -> str:
    """Open the next step of ``stepper(name)`` or ``hold(name)``; answers once that step was sent."""
    gate = _gate(name)
    gate.opened.put_nowait(None)
    return f"{name}: step {await gate.passed.get()}"


@server.tool()
async def ask(question: str, ctx: Context) -> str:
    """Elicit an answer from the user (a request to the client on this call's stream)."""
    result = await ctx.elicit(question, {"type": "object", "properties": {"answer": {"type": "string"}},
                                         "required": ["answer"]})
    return f"{result.action}: {(result.content or {}).get('answer')}"


async def _added() -> str:
    return "added at runtime"


@server.tool()
async def add_tool(name: str, ctx: Context) -> str:
    """Register a new tool now (every ready session gets ``notifications/tools/list_changed``)."""
    ctx.server.add_tool(Tool(_added, name=name, description="A tool added at runtime."))
    return f"added {name}"


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Tell the sessions subscribed to ``uri`` that it changed (``notifications/resources/updated``)."""
    ctx.server.resource_updated(uri)
    return f"touched {uri}"


@server.resource("fixture://watched", name="watched", mime_type="text/plain")
def watched() -> str:
    """A resource to subscribe to."""
    return "watched"


@server.resource("fixture://watched/{key}", name="watched-family", mime_type="text/plain")
def watched_family(key: str) -> str:
    """Resources to subscribe to, one per test (a subscription names an existing resource, as a read does)."""
    return f"watched {key}"


@server.tool()
async def poll(name: str, ctx: Context) -> str:
    """Send one message, close the SSE connection (SSE polling), then answer at ``release(name)``."""
    gate = _gate(name)
    await ctx.info("before closing")
    closed = ctx.close_sse_stream()
    await gate.opened.get()
    await ctx.info("while the client was away")
    gate.passed.put_nowait(1)
    return f"{name}: closed={closed}"


# -- the stateless era (2026-07-28) ---------------------------------------------------------------------------
@server.tool()
def routed(query: str, region: Annotated[str, param_header("Region")] = "<none>",
           count: Annotated[int, param_header("Count")] = 0,
           dry_run: Annotated[bool, param_header("Dry-Run")] = False) -> str:
    """Echo parameters that also travel as ``Mcp-Param-*`` headers (x-mcp-header)."""
    return f"{query}: region={region} count={count} dry_run={dry_run}"


@server.tool(input_schema={"type": "object", "properties": {"target": {"type": "object", "properties": {
    "zone": {"type": "string", "x-mcp-header": "Zone"}}}}})
def zoned(target: dict[str, Any] | None = None) -> str:
    """A header parameter nested in an object parameter (``Mcp-Param-Zone`` mirrors ``target.zone``)."""
    return f"zone={(target or {}).get('zone')}"


@server.tool()
async def needs_sampling(ctx: Context) -> str:
    """Needs the client's sampling capability (stateless era: -32021 when the request did not declare it)."""
    ctx.require_capability("sampling")
    return "sampling declared"


@server.tool()
async def count_up(steps: int, ctx: Context) -> str:
    """Report progress 1..steps (if asked for it), then answer."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
    return f"counted to {steps}"


class _Watch:
    def __init__(self) -> None:
        self.started: asyncio.Queue[None] = asyncio.Queue()
        self.outcome: asyncio.Queue[str] = asyncio.Queue()


_watches: dict[str, _Watch] = {}


def _watch(name: str) -> _Watch:
    watch = _watches.get(name)
    if watch is None:
        watch = _watches[name] = _Watch()
    return watch


@server.tool()
async def until_cancelled(name: str, ctx: Context) -> str:
    """Report progress 0 (if asked for it), then wait until cancelled, recording how it ended for
    ``cancel_outcome(name)``."""
    watch = _watch(name)
    await ctx.report_progress(0)
    watch.started.put_nowait(None)
    try:
        await asyncio.Event().wait()
    except asyncio.CancelledError as exc:
        watch.outcome.put_nowait(type(exc).__name__)
        raise
    return f"{name}: never cancelled"


@server.tool()
async def until_cancelled_started(name: str) -> str:
    """Answer once ``until_cancelled(name)`` is running."""
    await _watch(name).started.get()
    return f"{name}: started"


@server.tool()
async def cancel_outcome(name: str) -> str:
    """Answer once ``until_cancelled(name)`` has ended: with the exception that ended it."""
    return f"{name}: {await _watch(name).outcome.get()}"


@server.tool(task_support="optional")
async def task_ask(questions: list[str], ctx: Context) -> str:
    """Ask each question (all at once), as a task when the client takes one: it waits in input_required."""
    answers = await asyncio.gather(*(ask(question, ctx) for question in questions))
    return "; ".join(answers)


@server.tool(task_support="required")
async def task_only(fail: bool = False) -> str:
    """Must run as a task; a tool error when ``fail``."""
    if fail:
        raise ToolError("the job failed")
    return "done as a task"


@server.tool(task_support="optional")
async def task_until_cancelled(name: str, ctx: Context) -> str:
    """``until_cancelled``, as a task when the client takes one."""
    return await until_cancelled(name, ctx)


@server.prompt()
def greeting(who: str) -> str:
    """Greet someone."""
    return f"Hello, {who}!"


@server.resource("fixture://cached/both", name="cached-both", mime_type="text/plain", ttl_ms=60_000,
                 cache_scope="public")
def cached_both() -> str:
    """Reads carry their own ttlMs and cacheScope."""
    return "cached both"


@server.resource("fixture://cached/ttl", name="cached-ttl", mime_type="text/plain", ttl_ms=5_000)
def cached_ttl() -> str:
    """Reads carry their own ttlMs; the cacheScope is the server's."""
    return "cached ttl"


@server.resource("fixture://items/{item}", name="item", mime_type="text/plain", cache_scope="public")
def item(item: str) -> str:
    """A template whose reads are public; the ttlMs is the server's."""
    return f"item {item}"


@server.resource("fixture://grüße", name="greetings", mime_type="text/plain")
def greetings() -> str:
    """A resource whose URI is not plain ASCII (its Mcp-Name needs the base64 sentinel)."""
    return "grüße"
