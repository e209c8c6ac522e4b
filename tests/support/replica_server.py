"""The server of ``test_request_state_replicas.py`` (``WIREMCP_SERVER=tests.support.replica_server:server``).

Its tool needs two rounds of input (MRTR): the answers of the first round travel in the sealed
``requestState``, so any process holding the keys can finish the exchange. Each answer names the
process that produced it.
"""

from __future__ import annotations

import os

from wiremcp import Context, MCPServer

server = MCPServer("replica", "1.0.0")

_FORM = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}


@server.tool()
async def book(city: str, ctx: Context) -> str:
    """Ask for the dates, then for a confirmation; answer with both and this process's id."""
    dates = await ctx.elicit(f"Which dates in {city}?", _FORM)
    confirmation = await ctx.elicit("Confirm the booking?", _FORM)
    return (f"{city}: {(dates.content or {}).get('value')}, {(confirmation.content or {}).get('value')} "
            f"(pid {os.getpid()})")
