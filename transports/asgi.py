"""Small ASGI helpers shared by the HTTP endpoints."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import orjson

from wiremcp.errors import INVALID_REQUEST
from wiremcp.refusals import Refusal

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
SendASGI = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, SendASGI], Awaitable[None]]


_HEADERS = "wiremcp.headers"
"""Where the request's headers, by name, are kept in its scope once one has been read."""


def header(scope: Scope, name: bytes) -> str | None:
    """The first value of a request header (``name`` in lower case). The headers are indexed on the first
    call for a request (several layers read several headers of each request), again if they are replaced."""
    raw = scope["headers"]
    cached: tuple[object, dict[bytes, bytes]] | None = scope.get(_HEADERS)
    indexed = cached[1] if cached is not None and cached[0] is raw else _index(scope, raw)
    value = indexed.get(name)
    return value.decode("latin-1") if value is not None else None


def headers(scope: Scope) -> Callable[[str], str | None]:
    """The request's headers as the core reads them (``wiremcp.mirrored_headers.Headers``: a lower-case name
    to its first value), from the same index as ``header``, found once for all the names read."""
    raw = scope["headers"]
    cached: tuple[object, dict[bytes, bytes]] | None = scope.get(_HEADERS)
    get = (cached[1] if cached is not None and cached[0] is raw else _index(scope, raw)).get

    def read(name: str) -> str | None:
        value = get(name.encode())
        return value.decode("latin-1") if value is not None else None

    return read


def _index(scope: Scope, raw: list[tuple[bytes, bytes]]) -> dict[bytes, bytes]:
    """The request's headers by name, kept in its scope: on the first read, or when a middleware gave the
    request other headers since."""
    indexed: dict[bytes, bytes] = {}
    for key, value in reversed(raw):
        indexed[key] = value  # reversed: the first value of a repeated header wins
    scope[_HEADERS] = (raw, indexed)
    return indexed


async def respond(send: SendASGI, status: int, body: bytes = b"", *, content_type: bytes | None = None,
                  headers: list[tuple[bytes, bytes]] | None = None) -> None:
    out = list(headers or ())
    if content_type is not None:
        out.append((b"content-type", content_type))
    out.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body})


async def respond_json(send: SendASGI, status: int, payload: Any,
                       headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await respond(send, status, orjson.dumps(payload), content_type=b"application/json", headers=headers)


async def respond_error(send: SendASGI, status: int, code: int, message: str, *, id: Any = None,
                        headers: list[tuple[bytes, bytes]] | None = None) -> None:
    """An HTTP error whose body is a JSON-RPC error (so MCP clients can tell what went wrong)."""
    await respond_json(send, status, {"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}},
                       headers)


async def refuse(send: SendASGI, refusal: Refusal, *, id: Any = None) -> None:
    """A "not now" answer (``wiremcp.refusals``): its status, JSON-RPC error and headers, as every transport
    gives it."""
    await respond_error(send, refusal.status, refusal.code, refusal.message, id=id, headers=refusal.headers())


class BodyTooLarge(Exception):
    """The request body is larger than the limit ``read_body`` was given."""


class ClientDisconnected(Exception):
    """The client went away before its request body had arrived."""


async def read_body(receive: Receive, limit: int) -> bytes:
    """The whole request body; ``BodyTooLarge`` past ``limit`` bytes, ``ClientDisconnected`` if it never comes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnected
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge
        if not message.get("more_body", False):
            if not chunks:
                return chunk  # the whole body in one message, as most are
            chunks.append(chunk)
            return b"".join(chunks)
        chunks.append(chunk)


async def read_json_body(scope: Scope, receive: Receive, send: SendASGI, limit: int) -> bytes | None:
    """A POSTed JSON-RPC body, or None once the request was answered: 415 unless ``Content-Type`` is
    ``application/json``, 413 past ``limit`` bytes (by ``Content-Length`` before reading, or while reading).
    ``ClientDisconnected`` if the client goes away first."""
    content_type = header(scope, b"content-type")
    if content_type != "application/json" and (content_type or "").split(";")[0].strip().lower() != "application/json":
        await respond_error(send, 415, INVALID_REQUEST, "Unsupported Media Type: Content-Type must be application/json")
        return None
    length = header(scope, b"content-length")
    try:
        if length is not None and length.isdigit() and int(length) > limit:
            raise BodyTooLarge
        return await read_body(receive, limit)
    except BodyTooLarge:
        await respond_error(send, 413, INVALID_REQUEST, f"Payload Too Large: the limit is {limit} bytes")
        return None
