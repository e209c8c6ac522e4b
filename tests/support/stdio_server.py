"""A server for the stdio transport tests: ``wiremcp stdio tests.support.stdio_server:server``.

Every tool that runs for a while announces itself on stderr (``<tool>: started``) so a
test can wait for it without sleeping; the async ones also announce themselves on the wire
with a ``notifications/message`` related to their request.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import time

from wiremcp import Context, MCPServer

server = MCPServer("stdio-test", "1.0.0")

log = logging.getLogger("stdio_server")

_release = asyncio.Event()


def _announce(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


@server.tool()
async def slow(ctx: Context) -> str:
    """Wait until ``release`` is called (or the request is cancelled)."""
    _announce("slow: started")
    await ctx.info("slow: started")
    try:
        await _release.wait()
    except asyncio.CancelledError:
        _announce("slow: cancelled")
        raise
    return "slow: done"


@server.tool()
async def release() -> str:
    """Let every waiting ``slow`` call finish."""
    _release.set()
    return "released"


@server.tool()
def unmarked(seconds: float) -> str:
    """Block in ``time.sleep`` without being marked ``blocking``: its first call holds the event loop, and moves
    it to a worker thread."""
    _announce(f"unmarked: started {seconds}")
    time.sleep(seconds)
    return "unmarked: done"


@server.tool(blocking=True)
def blocking(seconds: float = 60.0) -> str:
    """Block a worker thread in ``time.sleep`` (marked ``blocking``: its calls go to one); cancellation cannot
    interrupt it."""
    _announce("blocking: started")
    time.sleep(seconds)
    _announce("blocking: finished")
    return "blocking: done"


@server.tool()
def noisy() -> str:
    """Write to stdout in every way user code does: print(), sys.__stdout__, fd 1, a child process."""
    print("noisy: print")
    sys.stdout.flush()
    if sys.__stdout__ is not None:
        sys.__stdout__.write("noisy: sys.__stdout__\n")
        sys.__stdout__.flush()
    os.write(1, b"noisy: fd 1\n")
    subprocess.run(["echo", "noisy: child process"], check=True)
    return "noisy: done"


@server.tool()
async def logs(ctx: Context) -> str:
    """Log through Python logging (stderr) and through MCP logging (the wire)."""
    log.warning("logs: python logging")
    await ctx.warning("logs: mcp logging")
    return "logs: done"


@server.tool()
def echo(text: str) -> str:
    """Return ``text`` unchanged."""
    return text
