"""A client of another MCP server, launched on stdio or reached over HTTP, in either era: what the command line
(``wiremcp list``, ``wiremcp call``) and a gateway's remote children (``wiremcp.transports.remote``) speak to it with.

``connect`` yields a ``Client`` that has settled the era: ``server/discover`` names the stateless one
(2026-07-28), else the ``initialize`` handshake. Every failure is ``Failed``: one line for the
user (empty when a launched server already printed its own) and the exit status to end with.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from wiremcp import methods
from wiremcp import protocol as proto

JSON = dict[str, Any]
"""Stateless-era methods whose ``Mcp-Name`` header mirrors a parameter."""
PROBE_BOUND = 10.0
"""At most this long for ``server/discover`` to be answered before the handshake is tried instead."""
CLOSE_BOUND = 5.0


class Failed(Exception):
    """Talking to the server failed: ``str`` is the line to print, ``status`` the exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


class RPCError(Failed):
    """The server answered with a JSON-RPC error."""

    def __init__(self, error: Any) -> None:
        error = error if isinstance(error, dict) else {}
        self.error: JSON = error
        """The error as the server sent it (``code``, ``message``, ``data``)."""
        self.code = error.get("code")
        super().__init__(f"{error.get('message') or 'error'} ({self.code})")


class NotAnswered(Failed):
    """An HTTP status without a JSON-RPC answer, or no answer in time: a probe falls back on it."""


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


def _reply(request: JSON) -> JSON:
    """Our answer to a request from the server: ``ping`` is answered, anything else is not offered."""
    if request.get("method") == "ping":
        return {"jsonrpc": "2.0", "id": request["id"], "result": {}}
    error = {"code": -32601, "message": f"the wiremcp command line does not offer {request.get('method')}"}
    return {"jsonrpc": "2.0", "id": request["id"], "error": error}


def _refused(exc: BaseException | None) -> bool:
    """Whether a refused connection is behind ``exc``: in its chain of causes, or in a group of attempts
    (anyio tries each address and raises "All connection attempts failed" from the group of their errors)."""
    seen: set[int] = set()
    pending = [exc]
    while pending:
        found = pending.pop()
        if found is None or id(found) in seen:
            continue
        seen.add(id(found))
        if isinstance(found, ConnectionRefusedError):
            return True
        if isinstance(found, BaseExceptionGroup):
            pending.extend(found.exceptions)
        pending.extend((found.__cause__, found.__context__))
    return False


def _parse(raw: str | bytes) -> JSON:
    """A JSON-RPC message, or {} for anything else (which is ignored)."""
    try:
        message = json.loads(raw)
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}


def _is_request(message: JSON) -> bool:
    return isinstance(message.get("method"), str) and "id" in message


def _answers(message: JSON, rid: Any) -> bool:
    """Whether ``message`` is the response to our request ``rid`` (an id ``true`` is not ``1``)."""
    rid_sent = message.get("id")
    return (type(rid_sent) is type(rid) and rid_sent == rid and "method" not in message
            and ("result" in message or "error" in message))


class Stdio:
    """A launched server: newline-delimited JSON on its stdin and stdout, its stderr left on ours."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.pending: dict[Any, asyncio.Future[JSON]] = {}
        self.ended: Failed | None = None
        self.reader = asyncio.create_task(self._read())

    async def send(self, message: JSON, headers: Mapping[str, str]) -> JSON | None:
        if self.ended is not None:
            raise self.ended
        rid, future = message.get("id"), None
        if "id" in message:
            future = self.pending[rid] = asyncio.get_running_loop().create_future()
        try:
            await self._write(message)
            return await future if future is not None else None
        finally:
            if future is not None:
                self.pending.pop(rid, None)

    async def _write(self, message: JSON) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        with contextlib.suppress(ConnectionError):  # a server that died: the reader tells its status
            await self.process.stdin.drain()

    async def _read(self) -> None:
        assert self.process.stdout is not None
        try:
            while line := await self.process.stdout.readline():
                message = _parse(line)
                if _is_request(message):
                    await self._write(_reply(message))
                for rid, future in self.pending.items():
                    if _answers(message, rid) and not future.done():
                        future.set_result(message)
        finally:
            status = await self.process.wait()
            # Status 2 is a launched wiremcp's own one-line error (a bad spec): already on our stderr.
            self.ended = Failed("" if status == 2 else f"the server exited with status {status} before answering",
                                2 if status == 2 else 1)
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(self.ended)

    async def close(self) -> None:
        assert self.process.stdin is not None
        with contextlib.suppress(ConnectionError, RuntimeError):
            self.process.stdin.close()  # end of input: the server exits
        try:
            async with asyncio.timeout(CLOSE_BOUND):
                await self.process.wait()
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        with contextlib.suppress(asyncio.CancelledError, Failed):
            await self.reader


class HTTP:
    """Streamable HTTP: each message its own POST, answered with JSON or an SSE stream."""

    def __init__(self, url: str, headers: Mapping[str, str]) -> None:
        self.url = url
        self.client = httpx.AsyncClient(headers=dict(headers), timeout=None)  # the Client sets deadlines
        self.session: str | None = None

    def _headers(self, extra: Mapping[str, str]) -> dict[str, str]:
        session = {"Mcp-Session-Id": self.session} if self.session else {}
        return {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", **session,
                **extra}

    async def send(self, message: JSON, headers: Mapping[str, str]) -> JSON | None:
        try:
            async with self.client.stream("POST", self.url, content=json.dumps(message),
                                          headers=self._headers(headers)) as response:
                if message.get("method") == "initialize" and "mcp-session-id" in response.headers:
                    self.session = response.headers["mcp-session-id"]
                return await self._answer(response, message, headers)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            reason = "connection refused" if _refused(exc) else " ".join(str(exc).split()) or type(exc).__name__
            raise Failed(f"cannot reach {self.url}: {reason}") from None

    async def _answer(self, response: httpx.Response, message: JSON, headers: Mapping[str, str]) -> JSON | None:
        status, kind = response.status_code, response.headers.get("content-type", "")
        if kind.startswith("text/event-stream") and "id" in message:
            return await self._stream(response, message["id"], headers)
        answer = _parse(await response.aread())
        if status in (401, 403):
            error = answer.get("error")
            detail = f": {error['message']}" if isinstance(error, dict) and error.get("message") else ""
            raise Failed(f"{self.url} refused the request (HTTP {status}{detail}); give credentials with "
                         "--header 'Authorization: Bearer TOKEN'")
        if "id" not in message and status < 400:
            return None
        if "id" in message and ("result" in answer or "error" in answer):
            return answer
        raise NotAnswered(f"{self.url} answered {message.get('method')} with HTTP {status} "
                          f"{response.reason_phrase}".rstrip())

    async def _stream(self, response: httpx.Response, rid: Any, headers: Mapping[str, str]) -> JSON:
        buffer, data = "", []
        async for text in response.aiter_text():
            buffer += text
            while "\n" in buffer:
                line, buffer = buffer.split("\n", 1)
                line = line.removesuffix("\r")
                if line.startswith("data:"):
                    data.append(line[5:].removeprefix(" "))
                elif not line and data:
                    message, data = _parse("\n".join(data)), []
                    if _is_request(message):  # a handshake-era server's request (ping): answered by POST
                        version = {k: v for k, v in headers.items() if k.lower() == "mcp-protocol-version"}
                        await self.client.post(self.url, content=json.dumps(_reply(message)),
                                               headers=self._headers(version))
                    elif _answers(message, rid):
                        return message
        raise Failed(f"{self.url} ended its event stream without answering")

    async def close(self) -> None:
        try:
            if self.session:  # ends the session; a server that does not allow it answers 405
                with contextlib.suppress(httpx.HTTPError, TimeoutError):
                    async with asyncio.timeout(CLOSE_BOUND):
                        await self.client.delete(self.url, headers=self._headers({}))
        finally:
            await self.client.aclose()


class Client:
    """Requests to one server in the era ``start`` settled on."""

    def __init__(self, channel: Stdio | HTTP, timeout: float = 30.0,
                 client_info: Mapping[str, str] | None = None) -> None:
        self.channel, self.timeout = channel, timeout
        self.ids = itertools.count(1)
        self.stateless = False
        self.version = ""
        self.capabilities: JSON = {}
        self.server_info: JSON = {}
        self.client_info = dict(client_info or {"name": "wiremcp", "version": "unknown"})

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
        return True

    async def _handshake(self, requested: str) -> None:
        params = {"protocolVersion": requested, "capabilities": {}, "clientInfo": self.client_info}
        result = await self.request("initialize", params)
        self.version = str(result.get("protocolVersion") or requested)  # the server may answer another
        self.capabilities = result.get("capabilities") or {}
        self.server_info = result.get("serverInfo") or {}
        await self._send({"jsonrpc": "2.0", "method": "notifications/initialized"}, self._headers("", {}))

    def _headers(self, method: str, params: JSON) -> dict[str, str]:
        out = {"MCP-Protocol-Version": self.version} if self.version else {}
        if self.stateless:
            out["Mcp-Method"] = method
            if method in methods.MIRRORED_NAME:
                out["Mcp-Name"] = header_value(str(params.get(methods.MIRRORED_NAME[method], "")))
        return out

    async def _send(self, message: JSON, headers: Mapping[str, str], timeout: float | None = None) -> JSON | None:
        bound = timeout or self.timeout
        try:
            async with asyncio.timeout(bound):
                return await self.channel.send(message, headers)
        except TimeoutError:
            raise NotAnswered(f"no answer to {message['method']} within {bound:g} s") from None

    async def request(self, method: str, params: Mapping[str, Any] | None = None, *,
                      headers: Mapping[str, str] | None = None, timeout: float | None = None) -> JSON:
        """The result of one request; ``RPCError`` for a JSON-RPC error."""
        body = dict(params or {})
        if self.stateless:
            body["_meta"] = {**body.get("_meta", {}), proto.META_VERSION: self.version,
                             proto.META_CAPABILITIES: {}, proto.META_CLIENT_INFO: self.client_info}
        message = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": body}
        answer = await self._send(message, {**self._headers(method, body), **(headers or {})}, timeout) or {}
        if "error" in answer:
            raise RPCError(answer["error"])
        result = answer.get("result")
        return result if isinstance(result, dict) else {}

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


async def launch(command: list[str]) -> Stdio:
    """A server process spoken to on its stdin and stdout; its stderr stays ours."""
    process = await asyncio.create_subprocess_exec(*command, stdin=asyncio.subprocess.PIPE,
                                                   stdout=asyncio.subprocess.PIPE, limit=1 << 26)  # long lines
    return Stdio(process)


@contextlib.asynccontextmanager
async def connect(target: str | list[str], *, protocol: str = "auto", headers: Mapping[str, str] | None = None,
                  timeout: float = 30.0, client_info: Mapping[str, str] | None = None) -> AsyncIterator[Client]:
    """A started ``Client`` for a URL (Streamable HTTP) or a command (a server launched on stdio)."""
    channel = HTTP(target, headers or {}) if isinstance(target, str) else await launch(target)
    try:
        client = Client(channel, timeout, client_info)
        await client.start(protocol)
        yield client
    finally:
        await channel.close()
