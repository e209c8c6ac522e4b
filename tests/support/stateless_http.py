"""Stateless-era HTTP by hand (2026-07-28): a request with its ``_meta`` and the headers a conforming
client sends, posted with httpx or byte for byte on a socket, and its result read back."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.support.http import ACCEPT_BOTH, READ_BOUND, SSEEvent, SSEReader
from wiremcp.protocol import (
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_SUBSCRIPTION,
    META_VERSION,
)

VERSION = "2026-07-28"
NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}
"""Methods whose ``Mcp-Name`` header mirrors a parameter."""
ACK = "notifications/subscriptions/acknowledged"
"""What a ``subscriptions/listen`` stream sends first."""

_ids = itertools.count(1000)


def b64(text: str) -> str:
    """The base64 sentinel form of a header value."""
    return f"=?base64?{base64.b64encode(text.encode()).decode()}?="


# -- building requests --------------------------------------------------------------------------------------
def meta(*, version: Any = VERSION, capabilities: Any = None, log_level: str | None = None,
         **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {META_VERSION: version,
                           META_CAPABILITIES: {} if capabilities is None else capabilities,
                           META_CLIENT_INFO: {"name": "wiremcp-stateless-tests", "version": "0"}}
    if log_level is not None:
        out[META_LOG_LEVEL] = log_level
    out.update(extra)
    return out


def with_meta(params: Mapping[str, Any] | None = None, **meta_args: Any) -> dict[str, Any]:
    return {**(params or {}), "_meta": meta(**meta_args)}


def standard_headers(method: str, params: Mapping[str, Any] | None = None,
                     version: str = VERSION) -> dict[str, str]:
    """What a conforming client sends: version, method and (where the method has one) name."""
    out = {"accept": ACCEPT_BOTH, "content-type": "application/json", "MCP-Protocol-Version": version,
           "Mcp-Method": method}
    key = NAMED.get(method)
    if key is not None and params is not None and isinstance(params.get(key), str):
        out["Mcp-Name"] = params[key]
    return out


def merge(base: Mapping[str, str], changes: Mapping[str, str | None]) -> dict[str, str]:
    """``base`` with ``changes`` applied, header names compared case-insensitively (None deletes)."""
    out = {k: v for k, v in base.items() if k.lower() not in {c.lower() for c in changes}}
    out.update({k: v for k, v in changes.items() if v is not None})
    return out


@dataclass
class Call:
    """One stateless POST: the JSON-RPC request and the headers that go with it."""

    method: str
    params: dict[str, Any] | None = field(default_factory=lambda: with_meta())
    headers: dict[str, str | None] = field(default_factory=dict)
    """Changes to the standard headers (None deletes one)."""
    rid: int | str = field(default_factory=lambda: next(_ids))

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"jsonrpc": "2.0", "id": self.rid, "method": self.method}
        if self.params is not None:
            out["params"] = self.params
        return out

    def all_headers(self) -> dict[str, str]:
        return merge(standard_headers(self.method, self.params), self.headers)


async def post(http: httpx.AsyncClient, url: str, call: Call) -> httpx.Response:
    return await http.post(url, content=json.dumps(call.body()), headers=call.all_headers())


@dataclass
class RawAnswer:
    status_code: int
    headers: dict[str, str]
    content: bytes

    def json(self) -> Any:
        return json.loads(self.content)


async def raw_post(url: str, call: Call) -> RawAnswer:
    """The POST written byte for byte on a socket: header values exactly as given (httpx refuses some)."""
    parsed = httpx.URL(url)
    body = json.dumps(call.body()).encode()
    head = [f"POST {parsed.raw_path.decode()} HTTP/1.1", f"Host: {parsed.host}:{parsed.port}", "Connection: close",
            f"Content-Length: {len(body)}", *(f"{k}: {v}" for k, v in call.all_headers().items())]
    async with asyncio.timeout(READ_BOUND):
        reader, writer = await asyncio.open_connection(parsed.host, parsed.port)
        try:
            writer.write("\r\n".join(head).encode("utf-8") + b"\r\n\r\n" + body)
            await writer.drain()
            data = await reader.read()
        finally:
            writer.close()
    head_bytes, _, content = data.partition(b"\r\n\r\n")
    status_line, *lines = head_bytes.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}
    return RawAnswer(int(status_line.split()[1]), headers, content)


def tool(name: str, arguments: dict[str, Any] | None = None, *, headers: Mapping[str, str | None] | None = None,
         **meta_args: Any) -> Call:
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    return Call("tools/call", with_meta(params, **meta_args), dict(headers or {}))


def result_of(response: httpx.Response | RawAnswer, rid: int | str) -> Any:
    """The result of a request answered with application/json and 200."""
    assert response.status_code == 200, (response.status_code, response.content)
    assert response.headers["content-type"] == "application/json", response.headers
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert body["id"] == rid, body
    assert "error" not in body, body
    return body["result"]


async def tool_text(http: httpx.AsyncClient, url: str, name: str, arguments: dict[str, Any]) -> str:
    call = tool(name, arguments)
    result = result_of(await post(http, url, call), call.rid)
    assert not result.get("isError"), result
    return str(result["content"][0]["text"])


def assert_no_session(response: httpx.Response | RawAnswer) -> None:
    assert "mcp-session-id" not in response.headers, response.headers


def listen_call(notifications: Mapping[str, Any], rid: int | str | None = None, **meta_args: Any) -> Call:
    call = Call("subscriptions/listen", with_meta({"notifications": dict(notifications)}, **meta_args))
    if rid is not None:
        call.rid = rid
    return call


@contextlib.asynccontextmanager
async def listening(http: httpx.AsyncClient, url: str, call: Call) -> AsyncIterator[SSEReader]:
    async with http.stream("POST", url, content=json.dumps(call.body()), headers=call.all_headers()) as response:
        assert response.status_code == 200
        assert_no_session(response)
        yield SSEReader(response)


def tagged(event: SSEEvent, rid: int | str) -> Any:
    """The message an event carries, after checking it is a notification tagged with ``rid``."""
    assert event.id is None, event
    assert event.data, event
    message = event.message
    assert "id" not in message, message
    assert message["params"]["_meta"][META_SUBSCRIPTION] == rid, message
    return message
