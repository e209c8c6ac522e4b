"""A client of another MCP server, launched on stdio or reached over HTTP, in either era: what the command line
(``wiremcp list``, ``wiremcp call``) and a gateway's remote children (``wiremcp.transports.gateway``) speak to it with.

``connect`` yields a ``Client`` that has settled the era: ``server/discover`` names the stateless one
(2026-07-28), else the ``initialize`` handshake. A request may bring a ``Relay``: what the server sends about it
(progress, log messages, its own requests for input) goes there; notifications about nothing we asked go to the
``Listener`` given to ``connect``, and ``Client.follow`` keeps them coming (the GET stream, or
``subscriptions/listen``). A request the caller gives up on is cancelled at the server. A handshake-era session
the server forgets is made again, and the request sent once more. Every failure is ``Failed``
(``wiremcp.transports.upstream_channels``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from wiremcp import methods
from wiremcp import protocol as proto
from wiremcp.transports.upstream_channels import (
    HTTP,
    JSON,
    Failed,
    Listener,
    NotAnswered,
    Relay,
    RPCError,
    SessionLost,
    Stdio,
)

__all__ = ["HTTP", "Client", "Failed", "NotAnswered", "RPCError", "Relay", "Stdio", "connect", "header_value", "is_url",
           "launch", "param_headers"]

PROBE_BOUND = 10.0
"""At most this long for ``server/discover`` to be answered before the handshake is tried instead."""
LISTEN_BACKOFF = (0.5, 30.0)
"""The first and the longest wait before ``subscriptions/listen`` is sent again after it ended."""


def header_value(text: str) -> str:
    """``text`` as a header value: plain printable ASCII as it is, anything else ``=?base64?...?=``."""
    plain = (text == text.strip(" ") and all(" " <= c <= "~" for c in text)
             and not (text.startswith("=?base64?") and text.endswith("?=")))
    return text if plain else f"=?base64?{base64.b64encode(text.encode()).decode()}?="


def param_headers(schema: Any, arguments: Any) -> dict[str, str]:
    """``Mcp-Param-*`` headers for the arguments whose schema property carries ``x-mcp-header``."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not isinstance(arguments, dict):
        return {}
    out: dict[str, str] = {}
    for key, prop in properties.items():
        value = arguments.get(key)
        if not isinstance(prop, dict) or value is None:
            continue
        name = prop.get("x-mcp-header")
        if isinstance(name, str) and name and isinstance(value, str | int):
            text = ("true" if value else "false") if isinstance(value, bool) else str(value)
            out[f"Mcp-Param-{name}"] = header_value(text)
        out.update(param_headers(prop, value))
    return out


class Client:
    """Requests to one server in the era ``start`` settled on."""

    def __init__(self, channel: Stdio | HTTP, timeout: float = 30.0,
                 client_info: Mapping[str, str] | None = None, capabilities: JSON | None = None) -> None:
        self.channel, self.timeout = channel, timeout
        self.ids = itertools.count(1)
        self.stateless = False
        self.version = ""
        self.capabilities: JSON = {}
        """The server's capabilities."""
        self.server_info: JSON = {}
        self.instructions: str | None = None
        self.client_info = dict(client_info or {"name": "wiremcp", "version": "unknown"})
        self.client_capabilities: JSON = capabilities or {}
        """Ours, as declared to the server (what a relay can answer: elicitation, sampling, roots)."""
        self._cancels: set[asyncio.Task[Any]] = set()

    async def start(self, protocol: str = "auto") -> None:
        """``auto``: probe with ``server/discover``, else the handshake with the latest handshake version."""
        if protocol in ("auto", proto.LATEST_STATELESS_VERSION) and await self._discover(probing=protocol == "auto"):
            return
        await self._handshake(proto.LATEST_HANDSHAKE_VERSION if protocol == "auto" else protocol)

    async def _discover(self, *, probing: bool) -> bool:
        self.stateless, self.version = True, proto.LATEST_STATELESS_VERSION
        try:
            result = await self.request("server/discover", timeout=min(self.timeout, PROBE_BOUND) if probing else None)
        except (RPCError, NotAnswered):
            if not probing:
                raise
            result = {}
        if proto.LATEST_STATELESS_VERSION not in (result.get("supportedVersions") or ()):
            self.stateless, self.version = False, ""
            if not probing:
                raise Failed(f"the server does not speak protocol {proto.LATEST_STATELESS_VERSION}")
            return False
        self.capabilities = result.get("capabilities") or {}
        self.server_info = (result.get("_meta") or {}).get(proto.META_SERVER_INFO) or {}
        self.instructions = result.get("instructions") if isinstance(result.get("instructions"), str) else None
        return True

    async def _handshake(self, requested: str) -> None:
        if isinstance(self.channel, HTTP):
            self.channel.session = None
        params = {"protocolVersion": requested, "capabilities": self.client_capabilities,
                  "clientInfo": self.client_info}
        result = await self._request("initialize", params)
        self.version = str(result.get("protocolVersion") or requested)  # the server may answer another
        self.capabilities = result.get("capabilities") or {}
        self.server_info = result.get("serverInfo") or {}
        self.instructions = result.get("instructions") if isinstance(result.get("instructions"), str) else None
        await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"}, self._headers("", {}))

    def _headers(self, method: str, params: JSON) -> dict[str, str]:
        out = {"MCP-Protocol-Version": self.version} if self.version else {}
        if self.stateless:
            out["Mcp-Method"] = method
            if method in methods.MIRRORED_NAME:
                out["Mcp-Name"] = header_value(str(params.get(methods.MIRRORED_NAME[method], "")))
        return out

    async def _send(self, message: JSON, headers: Mapping[str, str], timeout: float | None = None,
                    relay: Relay | None = None) -> JSON | None:
        bound = timeout or self.timeout
        try:
            async with asyncio.timeout(bound):
                return await self.channel.send(message, headers, relay)
        except TimeoutError:
            raise NotAnswered(f"no answer to {message['method']} within {bound:g} s") from None

    async def request(self, method: str, params: Mapping[str, Any] | None = None, *,
                      headers: Mapping[str, str] | None = None, timeout: float | None = None,
                      relay: Relay | None = None) -> JSON:
        """The result of one request; ``RPCError`` for a JSON-RPC error. With a ``relay``, the server may send
        progress (the token is the request's id), log messages and requests of its own about it."""
        try:
            return await self._request(method, params, headers=headers, timeout=timeout, relay=relay)
        except SessionLost:  # the server forgot our session (it restarted): a new one, and the request again
            await self._handshake(self.version)
            return await self._request(method, params, headers=headers, timeout=timeout, relay=relay)

    async def _request(self, method: str, params: Mapping[str, Any] | None = None, *,
                       headers: Mapping[str, str] | None = None, timeout: float | None = None,
                       relay: Relay | None = None) -> JSON:
        body = dict(params or {})
        rid = next(self.ids)
        if self.stateless:  # the capabilities a request brings are its own (a gateway's caller's), else ours
            body["_meta"] = {proto.META_CAPABILITIES: self.client_capabilities, **body.get("_meta", {}),
                             proto.META_VERSION: self.version, proto.META_CLIENT_INFO: self.client_info}
        if relay is not None:
            body["_meta"] = {**body.get("_meta", {}), "progressToken": rid}
        message = {"jsonrpc": "2.0", "id": rid, "method": method, "params": body}
        try:
            answer = await self._send(message, {**self._headers(method, body), **(headers or {})}, timeout,
                                      relay) or {}
        except (asyncio.CancelledError, NotAnswered):
            self._cancel(rid)
            raise
        if "error" in answer:
            raise RPCError(answer["error"])
        result = answer.get("result")
        return result if isinstance(result, dict) else {}

    def _cancel(self, rid: int) -> None:
        """Tell the server we no longer wait for ``rid`` (over HTTP in the stateless era, the request's closed
        stream already says so)."""
        if self.stateless and isinstance(self.channel, HTTP):
            return
        cancelled = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}
        task = asyncio.create_task(self._send(cancelled, self._headers("notifications/cancelled", {})))
        self._cancels.add(task)
        task.add_done_callback(self._cancels.discard)
        task.add_done_callback(lambda done: done.cancelled() or done.exception())

    async def follow(self, listener: Listener, kinds: Mapping[str, object]) -> None:
        """Keep the notifications that belong to no request coming to ``listener`` until cancelled: the
        GET stream (handshake era over HTTP), ``subscriptions/listen`` for ``kinds`` (stateless era; e.g.
        ``{"toolsListChanged": True}``), nothing more over stdio in the handshake era (they come anyway)."""
        self.channel.listener = listener
        if not self.stateless:
            if isinstance(self.channel, HTTP):
                await self.channel.follow(self.version)
            return
        wait = LISTEN_BACKOFF[0]
        while True:
            message = {"jsonrpc": "2.0", "id": next(self.ids), "method": "subscriptions/listen",
                       "params": {"notifications": dict(kinds),
                                  "_meta": {proto.META_VERSION: self.version, proto.META_CAPABILITIES: {},
                                            proto.META_CLIENT_INFO: self.client_info}}}
            with contextlib.suppress(Failed):
                await self.channel.send(message, self._headers("subscriptions/listen", {}))
                wait = LISTEN_BACKOFF[0]
            await asyncio.sleep(wait)
            wait = min(wait * 2, LISTEN_BACKOFF[1])

    async def list_all(self, method: str, key: str) -> list[JSON]:
        """Every item of a list method, following ``nextCursor``."""
        items: list[JSON] = []
        cursor, seen = None, set()
        while True:
            result = await self.request(method, {"cursor": cursor} if cursor else None)
            items += [item for item in result.get(key) or () if isinstance(item, dict)]
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str) or not cursor or cursor in seen:
                return items
            seen.add(cursor)


def is_url(target: str) -> bool:
    return target.lower().startswith(("http://", "https://"))


async def launch(command: list[str], listener: Listener | None = None,
                 env: Mapping[str, str] | None = None) -> Stdio:
    """A server process spoken to on its stdin and stdout; its stderr stays ours."""
    process = await asyncio.create_subprocess_exec(*command, stdin=asyncio.subprocess.PIPE,
                                                   stdout=asyncio.subprocess.PIPE, limit=1 << 26,  # long lines
                                                   env=dict(env) if env is not None else None)
    return Stdio(process, listener)


@contextlib.asynccontextmanager
async def connect(target: str | list[str], *, protocol: str = "auto", headers: Mapping[str, str] | None = None,
                  timeout: float = 30.0, client_info: Mapping[str, str] | None = None,
                  capabilities: JSON | None = None, listener: Listener | None = None,
                  env: Mapping[str, str] | None = None, auth: httpx.Auth | None = None) -> AsyncIterator[Client]:
    """A started ``Client`` for a URL (Streamable HTTP; ``auth`` authenticates its requests) or a command (a server
    launched on stdio, with ``env`` its whole environment when given)."""
    channel = HTTP(target, headers or {}, listener, auth) if isinstance(target, str) \
        else await launch(target, listener, env)
    try:
        client = Client(channel, timeout, client_info, capabilities)
        await client.start(protocol)
        yield client
    finally:
        await channel.close()
