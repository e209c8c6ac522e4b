"""An upstream that says who calls it (``whoami``: the caller's principal as this server verified it), for the
tests of a gateway that calls with the caller's own token. Served behind static tokens."""

from __future__ import annotations

from wiremcp import Context, MCPServer

server = MCPServer("whoami", "1.0.0")

TOKENS = "gateway-token=gateway,alice-at-upstream=alice,bob-at-upstream=bob"
"""Its ``WIREMCP_AUTH_STATIC_TOKENS``: the gateway's own token (to list with), and each person's."""


@server.tool()
async def whoami(ctx: Context) -> str:
    """The subject of the token this call came with."""
    return str(getattr(ctx.principal, "subject", None))
