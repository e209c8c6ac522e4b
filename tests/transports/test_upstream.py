"""The client of another MCP server (``wiremcp.transports.upstream``: the command line's, a gateway's remote children's) against real peers, in this process.

A real ``uvicorn app:asgi`` serves ``examples/everything.py`` (one per module) for both eras; scripted
peers check what the shipped server never does: a handshake-only stdio server that sends requests of its
own, answers with an older version, pages its list, stays silent or dies; and a handshake-only HTTP server
(in-process uvicorn on a real socket) that answers with SSE streams carrying a ping. Nothing sleeps.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.http import UvicornProcess, run_uvicorn, serve_in_process
from wiremcp.transports import upstream as client
from wiremcp.transports.asgi import Receive, Scope, SendASGI

BOUND = 20.0
"""Failure bound for one answer from a peer."""


@pytest.fixture(scope="module")
def everything() -> Iterator[UvicornProcess]:
    with run_uvicorn("examples.everything:server") as process:
        yield process
        assert "Traceback" not in process.output(), process.output()


# -- header values --------------------------------------------------------------------------------------
@pytest.mark.spec("2026-07-28/basic/transports/streamable-http#value-encoding")
@pytest.mark.parametrize(("value", "sent"), [
    ("us-west1", "us-west1"),
    ("Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="),
    (" padded ", "=?base64?IHBhZGRlZCA=?="),
    ("line1\nline2", "=?base64?bGluZTEKbGluZTI=?="),
    ("=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="),
])
def test_header_values_are_encoded_as_the_spec_table_shows(value: str, sent: str) -> None:
    assert client.header_value(value) == sent


def test_param_headers_follow_properties_chains_and_skip_absent_values() -> None:
    schema = {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"},
        "count": {"type": "integer", "x-mcp-header": "Count"},
        "dry": {"type": "boolean", "x-mcp-header": "Dry"},
        "missing": {"type": "string", "x-mcp-header": "Missing"},
        "nested": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
    }}
    arguments = {"region": "eu", "count": 42, "dry": False, "missing": None, "nested": {"zone": "ü"}}
    assert client.param_headers(schema, arguments) == {
        "Mcp-Param-Region": "eu", "Mcp-Param-Count": "42", "Mcp-Param-Dry": "false",
        "Mcp-Param-Zone": "=?base64?w7w=?="}


# -- the repository's server over HTTP ----------------------------------------------------------------
@pytest.mark.spec("2026-07-28/basic/transports/streamable-http#standard-request-headers")
async def test_auto_speaks_the_stateless_era_and_names_travel_in_headers(everything: UvicornProcess) -> None:
    async with client.connect(everything.url, timeout=BOUND) as mcp:
        assert mcp.stateless
        assert mcp.version == "2026-07-28"
        assert mcp.server_info["name"] == "wiremcp-everything"
        assert "tools" in mcp.capabilities
        tools = {tool["name"]: tool for tool in await mcp.list_all("tools/list", "tools")}
        schema = tools["test_x_mcp_header"]["inputSchema"]
        # the server checks Mcp-Param-Region against the body: an answer means the header matched
        for region in ("us-west1", "Hello, 世界", " padded ", "=?base64?literal?="):
            arguments = {"region": region}
            result = await mcp.request("tools/call", {"name": "test_x_mcp_header", "arguments": arguments},
                                       headers=client.param_headers(schema, arguments))
            assert result["content"][0]["text"] == f"region={region}"
        # a name that is not plain ASCII travels encoded in Mcp-Name: unknown (-32602), not a mismatch (-32020)
        with pytest.raises(client.RPCError) as refused:
            await mcp.request("tools/call", {"name": "wörd_count", "arguments": {}})
        assert refused.value.code == -32602, refused.value


@pytest.mark.spec("2025-11-25/basic/transports#session-management")
async def test_the_handshake_keeps_the_session_and_deletes_it_at_the_end(everything: UvicornProcess) -> None:
    async with client.connect(everything.url, protocol="2025-11-25", timeout=BOUND) as mcp:
        assert not mcp.stateless
        assert mcp.version == "2025-11-25"
        assert isinstance(mcp.channel, client.HTTP)
        session = mcp.channel.session
        assert session
        result = await mcp.request("tools/call", {"name": "greet", "arguments": {"name": "wire"}})
        assert result["content"][0]["text"] == "Hello, wire!"
    async with httpx.AsyncClient(timeout=BOUND) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        gone = await http.post(everything.url, json=body, headers={
            "accept": "application/json, text/event-stream", "mcp-session-id": session,
            "mcp-protocol-version": "2025-11-25"})
    assert gone.status_code == 404, gone.text


async def test_an_older_handshake_version_is_negotiated(everything: UvicornProcess) -> None:
    async with client.connect(everything.url, protocol="2025-03-26", timeout=BOUND) as mcp:
        assert mcp.version == "2025-03-26"
        assert [p["name"] for p in await mcp.list_all("prompts/list", "prompts")]


# -- a scripted handshake-only stdio server ----------------------------------------------------------------
LEGACY_STDIO = textwrap.dedent('''
    import json, sys

    def send(message):
        sys.stdout.write(json.dumps(message) + "\\n")
        sys.stdout.flush()

    def read():
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        return json.loads(line)

    seen = {}
    while True:
        message = read()
        method, rid, params = message.get("method"), message.get("id"), message.get("params")
        if method == "server/discover":
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "Method not found"}})
        elif method == "initialize":
            seen["initialize"] = params
            sys.stdout.write("a stray line that is not JSON\\n")
            send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}})
            send({"jsonrpc": "2.0", "id": 999, "result": {"not": "for the client"}})
            send({"jsonrpc": "2.0", "id": "p1", "method": "ping"})
            send({"jsonrpc": "2.0", "id": "s1", "method": "sampling/createMessage", "params": {}})
            seen["replies"] = [read(), read()]
            send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": "2025-06-18",
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "legacy", "version": "0"}}})
        elif method == "notifications/initialized":
            seen["initialized"] = True
        elif method == "tools/list":
            seen.setdefault("lists", []).append(params)
            page = {"tools": [{"name": "b", "inputSchema": {"type": "object"}}]}
            if not (params or {}).get("cursor"):
                page = {"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "nextCursor": "2"}
            send({"jsonrpc": "2.0", "id": rid, "result": page})
        elif method == "test/seen":
            send({"jsonrpc": "2.0", "id": rid, "result": seen})
        elif method == "test/exit":
            sys.exit(3)
        # test/silence: never answered
''')


@pytest.fixture
async def legacy(tmp_path: Path) -> AsyncIterator[client.Client]:
    script = tmp_path / "legacy.py"
    script.write_text(LEGACY_STDIO)
    channel = await client.launch([sys.executable, str(script)])
    try:
        yield client.Client(channel, BOUND)
    finally:
        await channel.close()


@pytest.mark.spec("2025-11-25/basic/lifecycle#version-negotiation")
async def test_a_handshake_only_stdio_server_gets_the_handshake_and_its_requests_answered(
        legacy: client.Client) -> None:
    await legacy.start("auto")  # server/discover is refused: the handshake, in the same process
    assert not legacy.stateless
    assert legacy.version == "2025-06-18"  # what the server answered, not what was asked
    assert legacy.server_info == {"name": "legacy", "version": "0"}
    assert [tool["name"] for tool in await legacy.list_all("tools/list", "tools")] == ["a", "b"]
    seen = await legacy.request("test/seen")
    assert seen["initialize"]["protocolVersion"] == "2025-11-25"
    assert seen["initialize"]["capabilities"] == {}
    assert seen["initialize"]["clientInfo"]["name"] == "wiremcp"
    assert seen["initialized"] is True
    ping, sampling = seen["replies"]
    assert ping == {"jsonrpc": "2.0", "id": "p1", "result": {}}
    assert sampling["id"] == "s1"
    assert sampling["error"]["code"] == -32601
    assert seen["lists"] == [{}, {"cursor": "2"}]  # no stateless _meta in the handshake era


async def test_a_request_without_an_answer_ends_at_its_deadline(legacy: client.Client) -> None:
    await legacy.start("2025-11-25")
    with pytest.raises(client.Failed, match=r"^no answer to test/silence within 0\.2 s$"):
        await legacy.request("test/silence", timeout=0.2)


async def test_a_server_that_exits_before_answering_is_named_with_its_status(legacy: client.Client) -> None:
    await legacy.start("2025-11-25")
    with pytest.raises(client.Failed, match="exited with status 3 before answering") as ended:
        await legacy.request("test/exit")
    assert ended.value.status == 1
    with pytest.raises(client.Failed, match="status 3"):
        await legacy.request("tools/list")


# -- a scripted handshake-only HTTP server that answers with SSE ------------------------------------------
class LegacySSE:
    """Refuses ``server/discover`` with an empty 400, starts a session, answers requests on SSE streams
    that carry a priming event, a notification and a ``ping`` before the response; 405 for DELETE."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, str], Any]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            event = await receive()
            body += event.get("body", b"")
            if not event.get("more_body"):
                break
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        message: Any = json.loads(body) if body else {}
        self.seen.append((scope["method"], headers, message))
        if scope["method"] == "DELETE":
            await self._answer(send, 405)
        elif message.get("method") == "server/discover":
            await self._answer(send, 400)
        elif "method" not in message or "id" not in message:
            await self._answer(send, 202)
        elif message["method"] == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "sse", "version": "0"}}
            await self._answer(send, 200, {"jsonrpc": "2.0", "id": message["id"], "result": result},
                               [(b"mcp-session-id", b"s-1")])
        else:
            events = [("e1", ""),
                      ("e2", json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                                         "params": {"progressToken": 1, "progress": 1}})),
                      ("e3", json.dumps({"jsonrpc": "2.0", "id": "p1", "method": "ping"})),
                      ("e4", json.dumps({"jsonrpc": "2.0", "id": message["id"],
                                         "result": {"tools": [{"name": "t", "inputSchema": {}}]}}, indent=1))]
            # CRLF line ends, and the response's JSON spread over several data lines
            text = "".join(f"id: {eid}\r\n" + "".join(f"data: {line}\r\n" for line in data.split("\n")) + "\r\n"
                           for eid, data in events)
            await self._answer(send, 200, None, [(b"content-type", b"text/event-stream")], text.encode())

    @staticmethod
    async def _answer(send: SendASGI, status: int, body: Any = None, headers: list[tuple[bytes, bytes]] | None = None,
                      raw: bytes = b"") -> None:
        out = [(b"content-type", b"application/json")] if body is not None else []
        await send({"type": "http.response.start", "status": status, "headers": out + (headers or [])})
        await send({"type": "http.response.body", "body": json.dumps(body).encode() if body is not None else raw})


@pytest.mark.spec("2025-11-25/basic/transports#sending-messages-to-the-server")
async def test_a_handshake_only_http_server_with_sse_answers() -> None:
    peer = LegacySSE()
    async with serve_in_process(peer) as base, client.connect(f"{base}/mcp", headers={"X-Extra": "1"},
                                                              timeout=BOUND) as mcp:
        assert not mcp.stateless
        assert mcp.version == "2025-11-25"
        assert [tool["name"] for tool in await mcp.list_all("tools/list", "tools")] == ["t"]
    methods = [(verb, message.get("method")) for verb, _, message in peer.seen]
    assert methods == [("POST", "server/discover"), ("POST", "initialize"), ("POST", "notifications/initialized"),
                       ("POST", "tools/list"), ("POST", None), ("DELETE", None)]
    (_, discover, _), (_, initialize, _), (_, initialized, _), (_, listing, _), (_, reply, answer), (_, delete, _) = (
        peer.seen)
    for headers in (discover, initialize, initialized, listing, reply):
        assert headers["accept"] == "application/json, text/event-stream"
        assert headers["content-type"] == "application/json"
        assert headers["x-extra"] == "1"
    assert discover["mcp-method"] == "server/discover"
    assert discover["mcp-protocol-version"] == "2026-07-28"
    assert "mcp-session-id" not in initialize
    assert "mcp-protocol-version" not in initialize
    for headers in (initialized, listing, reply, delete):
        assert headers["mcp-session-id"] == "s-1"
    for headers in (initialized, listing, reply):
        assert headers["mcp-protocol-version"] == "2025-11-25"
        assert "mcp-method" not in headers
    assert answer == {"jsonrpc": "2.0", "id": "p1", "result": {}}


def test_a_refusal_is_found_in_a_chain_of_causes_or_in_a_group_of_attempts() -> None:
    """anyio tries each address of a host and raises "All connection attempts failed" from the group of their
    errors: a refusal inside the group is still a refusal."""
    from wiremcp.transports.upstream_channels import refused as _refused

    def chained(outer: BaseException, cause: BaseException) -> BaseException:
        outer.__cause__ = cause
        return outer

    refused = ConnectionRefusedError(111, "Connection refused")
    assert _refused(chained(OSError("wrapped"), refused))
    assert _refused(chained(OSError("All connection attempts failed"),
                            ExceptionGroup("attempts", [TimeoutError("v6"), refused])))
    assert not _refused(chained(OSError("All connection attempts failed"), ExceptionGroup("attempts", [TimeoutError()])))
    assert not _refused(None)
