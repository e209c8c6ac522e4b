"""The server of the forwarded-headers tests (``tests.support.address_limited_server:server``): ``ping`` is
limited to ``LIMIT`` calls per caller address in ten minutes, and answers with the address the server saw,
so a test can tell whose ``X-Forwarded-For`` was believed."""

from __future__ import annotations

from wiremcp import MCPServer
from wiremcp.middleware import Call, CallNext
from wiremcp.rate_limits import RateLimit
from wiremcp.types import JSONObject

LIMIT = 3
"""Calls in ten minutes one address may make."""

server = MCPServer("address-limited", "1.0.0")
seen: list[str | None] = []


@server.tool()
def ping() -> str:
    """The address of the last caller (as the middleware below saw it)."""
    return str(seen[-1])


@server.add_middleware
async def note_address(call: Call, call_next: CallNext) -> JSONObject | None:
    seen.append(call.peer)
    return await call_next()


server.add_middleware(RateLimit(LIMIT, per=600, methods=["tools/call"], by="peer"))
