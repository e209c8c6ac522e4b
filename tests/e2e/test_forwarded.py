"""Forwarded headers are believed only from the proxies ``WIREMCP_TRUSTED_PROXIES`` names: a loopback client
that writes a new ``X-Forwarded-For`` on every call of a tool limited to three calls per address gets three,
not eight, under ``wiremcp http`` (uvicorn's own proxy step off) and under ``uvicorn app:asgi`` with uvicorn's
defaults (its proxy step on, trusting 127.0.0.1: the address it took from the header is not believed), in
both eras. With the proxy named, the header is the client's address and each forwarded client has its own
bucket; only the rightmost untrusted hop counts."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from tests.support.address_limited_server import LIMIT
from tests.support.http import UvicornProcess, error_of, initialize, run_uvicorn, run_wiremcp_http
from tests.support.stateless_http import post, tool
from wiremcp.errors import RATE_LIMITED
from wiremcp.transports.forwarded import UNTRUSTED

SERVER = "tests.support.address_limited_server:server"
CALLS = 8

pytestmark = pytest.mark.timeout(60)

Caller = Callable[[httpx.AsyncClient, str, dict[str, str]], Awaitable[httpx.Response]]


async def stateless(http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> httpx.Response:
    call = tool("ping", {})
    call.headers.update(headers)
    return await post(http, url, call)


async def handshake(http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> httpx.Response:
    session = await initialize(http, url, "2025-11-25")  # a new session each time: no way out of the bucket
    return await session.request("tools/call", {"name": "ping", "arguments": {}}, **headers)


ERAS: dict[str, Caller] = {"stateless": stateless, "handshake": handshake}


async def rotating(served: UvicornProcess, era: str) -> tuple[list[str], int]:
    """``CALLS`` calls of ``ping``, each with another ``X-Forwarded-For``: the addresses the answered ones saw,
    and how many were refused as rate limited (429, -32023)."""
    seen: list[str] = []
    refused = 0
    async with httpx.AsyncClient(timeout=10) as http:
        for n in range(CALLS):
            response = await ERAS[era](http, served.url, {"X-Forwarded-For": f"203.0.113.{n + 1}"})
            if response.status_code == 429:
                assert error_of(response)[0] == RATE_LIMITED, response.text
                refused += 1
                continue
            assert response.status_code == 200, response.text
            result: dict[str, Any] = response.json()["result"]
            seen.append(result["content"][0]["text"])
    return seen, refused


@pytest.mark.parametrize("era", ERAS)
async def test_wiremcp_http_ignores_a_loopback_clients_forwarded_for(era: str) -> None:
    with run_wiremcp_http(SERVER) as served:
        seen, refused = await rotating(served, era)
    assert (seen, refused) == (["127.0.0.1"] * LIMIT, CALLS - LIMIT)


@pytest.mark.parametrize("era", ERAS)
async def test_uvicorns_own_proxy_step_cannot_choose_the_address_wiremcp_counts(era: str) -> None:
    with run_uvicorn(SERVER) as served:  # uvicorn's defaults: --proxy-headers, 127.0.0.1 trusted
        seen, refused = await rotating(served, era)
        log = served.output()
    assert (seen, refused) == ([UNTRUSTED] * LIMIT, CALLS - LIMIT)
    assert log.count("WIREMCP_TRUSTED_PROXIES names no proxy") == 1


@pytest.mark.setting("WIREMCP_TRUSTED_PROXIES")
@pytest.mark.parametrize("era", ERAS)
async def test_a_named_proxys_forwarded_for_is_the_clients_address(era: str) -> None:
    with run_wiremcp_http(SERVER, {"WIREMCP_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8"}) as served:
        seen, refused = await rotating(served, era)
        async with httpx.AsyncClient(timeout=10) as http:
            # a chain: the client wrote a hop of its own, then two trusted proxies appended theirs
            chained = await ERAS[era](http, served.url, {"X-Forwarded-For": "198.51.100.7, 203.0.113.99, 10.1.2.3"})
    assert (seen, refused) == ([f"203.0.113.{n + 1}" for n in range(CALLS)], 0)
    assert chained.json()["result"]["content"][0]["text"] == "203.0.113.99"
