"""A remote child: another MCP server, reached over Streamable HTTP or launched on stdio, served as an ``MCPServer``
whose tools are the upstream's, for a gateway to mount (``gateway.mount(remote("https://…/mcp"), prefix="x")``)
under its own policy: its middleware, scopes, rate limits and audit apply to them as to its own.

The child's lifespan (``wiremcp.lifespan``) connects: when the gateway starts serving, the upstream is reached (in
the era it offers: stateless where it can, else the handshake), its tools are listed and each is served here,
its schemas as the upstream wrote them; a call is sent on as the caller made it and answered with what the upstream
answered (its content, structured content, ``isError``; a JSON-RPC error as that error). When the gateway stops,
the connection closes (a launched upstream exits) and the tools are withdrawn.

This is the first part of the gateway: tools, listed once at start. Resources, prompts and completions, lists that
follow the upstream's changes, progress, logging and requests for input relayed both ways, reconnection and
credentials other than fixed headers come next; until then this module is not part of the public API.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from wiremcp.errors import MCPError
from wiremcp.server import MCPServer
from wiremcp.tools import Tool, ToolResult
from wiremcp.transports.upstream import Client, RPCError, connect
from wiremcp.types import JSONObject

CLIENT_INFO = {"name": "wiremcp-gateway", "version": "1"}
PROTOCOL_META = "io.modelcontextprotocol/"
"""The prefix of the ``_meta`` keys the protocol itself puts on a result (the stateless era's ``serverInfo``)."""


def remote(url: str | None = None, *, command: Sequence[str] | None = None,
           headers: Mapping[str, str] | None = None, name: str | None = None, protocol: str = "auto",
           timeout: float = 30.0) -> MCPServer:
    """The server at ``url`` (Streamable HTTP; ``headers`` sent with every request) or the one ``command`` launches
    (stdio), as a child to mount. ``timeout``: how long one request to it may take."""
    if (url is None) == (command is None):
        raise ValueError("remote() takes a url or a command: one of them")
    target: str | list[str] = url if url is not None else list(command or ())
    if isinstance(target, list) and not target:
        raise ValueError("remote(command=...) needs the command to run, as a list of its words")
    label = name or (url if url is not None else " ".join(target))

    @contextlib.asynccontextmanager
    async def connected(server: MCPServer) -> AsyncIterator[Client]:
        async with connect(target, protocol=protocol, headers=headers, timeout=timeout,
                           client_info=CLIENT_INFO) as upstream:
            listed = await upstream.list_all("tools/list", "tools")
            for tool in listed:
                server.add_tool(_forwarded(upstream, tool), replace=True)
            try:
                yield upstream
            finally:
                for tool in listed:
                    server.tools.pop(str(tool["name"]), None)
                server.list_changed("tools")

    return MCPServer(str(label), lifespan=connected)


def _forwarded(upstream: Client, described: JSONObject) -> Tool:
    """A tool of the upstream, served here: its definition as written, a call sent on."""
    name = str(described["name"])

    async def forward(**arguments: Any) -> ToolResult:
        try:
            result = await upstream.request("tools/call", {"name": name, "arguments": arguments})
        except RPCError as exc:  # the upstream's JSON-RPC error is the caller's
            code = exc.error.get("code")
            raise MCPError(code if isinstance(code, int) else -32603,
                           str(exc.error.get("message") or "the upstream failed"), exc.error.get("data")) from None
        meta = {key: value for key, value in (result.get("_meta") or {}).items()
                if not key.startswith(PROTOCOL_META)}  # the upstream's envelope (its serverInfo), not the result's
        return ToolResult(list(result.get("content") or []), result.get("structuredContent"),
                          is_error=bool(result.get("isError")), meta=meta or None)

    return Tool(forward, name=name, title=described.get("title"), description=described.get("description"),
                annotations=described.get("annotations"), icons=described.get("icons"),
                input_schema=described.get("inputSchema") or {"type": "object"},
                output_schema=described.get("outputSchema"))
