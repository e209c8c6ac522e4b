"""A remote child: another MCP server, reached over Streamable HTTP or launched on stdio, served as an ``MCPServer``
whose tools and resources are the upstream's, for a gateway to mount (``gateway.mount(remote(url), prefix="x")``)
under its own policy: its middleware, scopes, rate limits and audit apply to them as to its own.

The child's lifespan (``wiremcp.lifespan``) connects: when the gateway starts serving, the upstream is reached (in
the era it offers: stateless where it can, else the handshake), and its tools and resources are listed and served
here as the upstream describes them. A call is sent on as the caller made it and answered with what the upstream
answered (its content, structured content, ``isError``); a read, with the upstream's contents; the upstream's
JSON-RPC error is the caller's. When the gateway stops, the connection closes (a launched upstream exits) and what
was listed is withdrawn.

This is the first part of the gateway: tools and resources, listed once at start. Resource templates, prompts and
completions, lists that follow the upstream's changes, progress, logging and requests for input relayed both ways,
reconnection and credentials other than fixed headers come next; until then this module is not part of the public
API.
"""

from __future__ import annotations

import base64
import contextlib
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from wiremcp.errors import MCPError
from wiremcp.resources import Resource
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
            offered = upstream.capabilities
            listed = await upstream.list_all("tools/list", "tools") if "tools" in offered else []
            for tool in listed:
                server.add_tool(_forwarded(upstream, tool), replace=True)
            resources = await upstream.list_all("resources/list", "resources") if "resources" in offered else []
            server.resources.replace([], [_read_through(upstream, resource) for resource in resources])
            try:
                yield upstream
            finally:
                for tool in listed:
                    server.tools.pop(str(tool["name"]), None)
                server.list_changed("tools")
                server.resources.replace([str(resource["uri"]) for resource in resources], [])

    return MCPServer(str(label), lifespan=connected)


def _read_through(upstream: Client, described: JSONObject) -> Resource:
    """A resource of the upstream, served here: listed as the upstream lists it, read from it on each read."""
    uri = str(described["uri"])

    async def read() -> list[JSONObject | str | bytes]:
        try:
            result = await upstream.request("resources/read", {"uri": uri})
        except RPCError as exc:
            raise _their_error(exc) from None
        # The resource's own contents as text or bytes, so that they carry the URI they were read at here (a
        # mounted child's URIs are the gateway's); contents of other URIs as the upstream gave them.
        contents: list[JSONObject | str | bytes] = []
        for content in result.get("contents") or []:
            if isinstance(content, dict) and content.get("uri") == uri and isinstance(content.get("text"), str):
                contents.append(content["text"])
            elif isinstance(content, dict) and content.get("uri") == uri and isinstance(content.get("blob"), str):
                contents.append(base64.b64decode(content["blob"]))
            elif isinstance(content, dict):
                contents.append(content)
        return contents

    size = described.get("size")
    return Resource(uri, read, name=described.get("name"), title=described.get("title"),
                    description=described.get("description"), mime_type=described.get("mimeType"),
                    size=size if isinstance(size, int) else None, annotations=described.get("annotations"),
                    icons=described.get("icons"))


def _their_error(exc: RPCError) -> MCPError:
    """The upstream's JSON-RPC error, as the caller's."""
    code = exc.error.get("code")
    return MCPError(code if isinstance(code, int) else -32603, str(exc.error.get("message") or "the upstream failed"),
                    exc.error.get("data"))


def _forwarded(upstream: Client, described: JSONObject) -> Tool:
    """A tool of the upstream, served here: its definition as written, a call sent on."""
    name = str(described["name"])

    async def forward(**arguments: Any) -> ToolResult:
        try:
            result = await upstream.request("tools/call", {"name": name, "arguments": arguments})
        except RPCError as exc:  # the upstream's JSON-RPC error is the caller's
            raise _their_error(exc) from None
        meta = {key: value for key, value in (result.get("_meta") or {}).items()
                if not key.startswith(PROTOCOL_META)}  # the upstream's envelope (its serverInfo), not the result's
        return ToolResult(list(result.get("content") or []), result.get("structuredContent"),
                          is_error=bool(result.get("isError")), meta=meta or None)

    return Tool(forward, name=name, title=described.get("title"), description=described.get("description"),
                annotations=described.get("annotations"), icons=described.get("icons"),
                input_schema=described.get("inputSchema") or {"type": "object"},
                output_schema=described.get("outputSchema"))
