"""The server of the rate-limit tests (``tests.support.rate_limited_server:server``), over HTTP replicas on one
Redis and over stdio.

Two rules, five calls a minute each: ``echo`` per caller as ``by="principal"`` counts one without a principal
(its address over HTTP, then its session), ``note`` per handshake-era session (``by="session"``).
"""

from __future__ import annotations

from wiremcp import MCPServer
from wiremcp.rate_limits import RateLimit

LIMIT = 5
"""Calls a minute each rule allows a caller."""

server = MCPServer("rate-limited", "1.0.0")


@server.tool()
async def echo(text: str) -> str:
    """Answer with ``text``."""
    return text


@server.tool()
async def note(text: str) -> str:
    """Answer with ``text``, noted."""
    return f"noted: {text}"


server.add_middleware(RateLimit(LIMIT, per=60, methods=["tools/call"], tools=["echo"]))
server.add_middleware(RateLimit(LIMIT, per=60, methods=["tools/call"], tools=["note"], by="session"))
