"""``HostOriginGuard``: 421 for a ``Host`` not allowed, 403 for a present ``Origin`` not allowed.

Driven as plain ASGI (no socket), so a request can lack a ``Host`` header altogether.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
import pytest

from wiremcp.errors import INVALID_REQUEST
from wiremcp.transports.asgi import Message, Receive, Scope, SendASGI, respond
from wiremcp.transports.guard import HostOriginGuard

ORIGIN = "2025-11-25/basic/transports#security-warning"


async def ok(scope: Scope, receive: Receive, send: SendASGI) -> None:
    await respond(send, 200, b"ok")


async def call(guard: HostOriginGuard, host: str | None, origin: str | None = None,
               scope_type: str = "http") -> tuple[int, Any]:
    """(status, decoded body) of one GET through the guard."""
    headers: list[tuple[bytes, bytes]] = []
    if host is not None:
        headers.append((b"host", host.encode("latin-1")))
    if origin is not None:
        headers.append((b"origin", origin.encode("latin-1")))
    scope: Scope = {"type": scope_type, "method": "GET", "path": "/mcp", "headers": headers}
    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await guard(scope, receive, send)
    if not sent:
        return 0, None
    body = b"".join(m.get("body", b"") for m in sent[1:])
    return sent[0]["status"], orjson.loads(body) if sent[0]["status"] != 200 else body


def guard(hosts: Iterable[str] | None = None, origins: Iterable[str] | None = None) -> HostOriginGuard:
    kwargs: dict[str, Iterable[str]] = {}
    if hosts is not None:
        kwargs["allowed_hosts"] = hosts
    if origins is not None:
        kwargs["allowed_origins"] = origins
    return HostOriginGuard(ok, **kwargs)


async def status(g: HostOriginGuard, host: str | None, origin: str | None = None) -> int:
    return (await call(g, host, origin))[0]


# -- the loopback defaults -------------------------------------------------------------------------------
@pytest.mark.parametrize("host", ["127.0.0.1:8000", "127.0.0.1", "localhost:3000", "localhost", "LOCALHOST:80",
                                  "[::1]:8080", "[::1]"])
@pytest.mark.spec(ORIGIN)
async def test_loopback_hosts_are_allowed_by_default(host: str) -> None:
    assert await status(guard(), host) == 200


@pytest.mark.parametrize("host", ["example.com", "example.com:8000", "127.0.0.1.nip.io:8000", "localhost.evil.com",
                                  "evil.com:127", "0.0.0.0:8000", "[::2]:8080", "[::ffff:127.0.0.1]:80", ""])
@pytest.mark.spec(ORIGIN)
async def test_other_hosts_get_421_with_a_json_rpc_error(host: str) -> None:
    code, body = await call(guard(), host)
    assert code == 421
    assert body["error"]["code"] == INVALID_REQUEST
    assert body["id"] is None


@pytest.mark.spec(ORIGIN)
async def test_a_request_without_host_gets_421() -> None:
    assert await status(guard(), None) == 421


@pytest.mark.parametrize("origin", [None, "http://localhost:5173", "https://localhost", "http://127.0.0.1:8000",
                                    "https://127.0.0.1", "http://[::1]:3000", "HTTP://LOCALHOST:5173"])
@pytest.mark.spec(ORIGIN)
async def test_loopback_origins_and_an_absent_origin_are_allowed(origin: str | None) -> None:
    assert await status(guard(), "localhost:8000", origin) == 200


@pytest.mark.parametrize("origin", ["http://evil.example", "https://evil.example:8443", "null", "localhost:5173",
                                    "file://", "http://localhost.evil.example", "ftp://localhost",
                                    "http://[::2]:3000", ""])
@pytest.mark.spec(ORIGIN)
async def test_other_origins_get_403_with_a_json_rpc_error(origin: str) -> None:
    code, body = await call(guard(), "localhost:8000", origin)
    assert code == 403
    assert body["error"]["code"] == INVALID_REQUEST
    assert body["id"] is None


async def test_the_host_is_checked_before_the_origin() -> None:
    assert await status(guard(), "evil.example", "http://evil.example") == 421


# -- configured lists ---------------------------------------------------------------------------------------
async def test_star_turns_each_check_off() -> None:
    anything = guard(hosts=["*"], origins=["*"])
    assert await status(anything, "evil.example:1234", "http://evil.example") == 200
    assert await status(anything, None, "null") == 200
    hosts_only = guard(hosts=["*"])
    assert await status(hosts_only, "evil.example", None) == 200
    assert await status(hosts_only, "evil.example", "http://evil.example") == 403


@pytest.mark.parametrize(("allowed", "host", "expected"), [
    (["mcp.example.com"], "mcp.example.com", 200),
    (["mcp.example.com"], "mcp.example.com:9000", 200),  # no port in the pattern: any port
    (["mcp.example.com"], "MCP.Example.COM:443", 200),
    (["mcp.example.com"], "other.example.com", 421),
    (["mcp.example.com"], "localhost:8000", 421),  # an explicit list replaces the loopback default
    (["mcp.example.com:8443"], "mcp.example.com:8443", 200),
    (["mcp.example.com:8443"], "mcp.example.com:9000", 421),
    (["mcp.example.com:8443"], "mcp.example.com", 421),
    (["mcp.example.com:443"], "mcp.example.com", 200),  # the default port may be left out
    (["mcp.example.com:80"], "mcp.example.com", 200),
    (["mcp.example.com:*"], "mcp.example.com:1", 200),
    (["*:8080"], "anything.example:8080", 200),
    (["*:8080"], "anything.example:8081", 421),
    (["a.example", " b.example:81 ", ""], "b.example:81", 200),
    (["[2001:db8::1]:8443"], "[2001:db8::1]:8443", 200),
    (["[2001:db8::1]:8443"], "[2001:db8::1]:8444", 421),
    (["[2001:db8::1]"], "[2001:db8::1]:1234", 200),
    (["[2001:db8::1]"], "[2001:db8::2]:1234", 421),
])
async def test_explicit_host_lists(allowed: list[str], host: str, expected: int) -> None:
    assert await status(guard(hosts=allowed), host) == expected


@pytest.mark.parametrize(("allowed", "origin", "expected"), [
    (["https://app.example.com"], "https://app.example.com", 200),
    (["https://app.example.com"], "https://app.example.com:8443", 200),
    (["https://app.example.com"], "http://app.example.com", 403),  # the scheme counts
    (["https://app.example.com:8443"], "https://app.example.com", 403),
    (["https://app.example.com:443"], "https://app.example.com", 200),
    (["https://app.example.com/"], "https://app.example.com", 200),
    (["http://[::1]:5173"], "http://[::1]:5173", 200),
    (["http://[::1]:5173"], "http://[::1]:5174", 403),
    (["https://*"], "https://anything.example", 200),
    (["https://*"], "http://anything.example", 403),
])
async def test_explicit_origin_lists(allowed: list[str], origin: str, expected: int) -> None:
    assert await status(guard(origins=allowed), "localhost", origin) == expected


async def test_only_http_requests_are_checked() -> None:
    assert await call(guard(), None, scope_type="lifespan") == (200, b"ok")


@pytest.mark.spec(ORIGIN)
async def test_a_leading_wildcard_label_matches_subdomains_only() -> None:
    g = guard(hosts=["*.example.com"], origins=["https://*.example.com"])
    assert await status(g, "mcp.example.com") == 200
    assert await status(g, "a.b.example.com:8443") == 200
    assert await status(g, "example.com") == 421
    assert await status(g, "evilexample.com") == 421
    assert await status(g, "mcp.example.com", "https://app.example.com") == 200
    assert await status(g, "mcp.example.com", "https://example.com.evil.net") == 403
