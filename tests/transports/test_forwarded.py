"""``wiremcp.transports.forwarded``: which peers' forwarded headers are believed, which hop of a chain is the
client, and what a request's ``client`` and ``scheme`` become."""

from __future__ import annotations

from typing import Any

import pytest

from wiremcp.transports.asgi import Message, Scope
from wiremcp.transports.forwarded import UNTRUSTED, ForwardedHeaders, TrustedProxies


def test_trusted_proxies_are_addresses_networks_or_everyone() -> None:
    trusted = TrustedProxies(["127.0.0.1", "10.0.0.0/8", "::1"])
    assert "127.0.0.1" in trusted
    assert "10.20.30.40" in trusted
    assert "::1" in trusted
    assert "127.0.0.2" not in trusted
    assert "not-an-address" not in trusted
    assert "anything" in TrustedProxies(["*"])
    assert not TrustedProxies()


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "proxy.internal", "127.0.0.1:8080", ""])
def test_a_trusted_proxy_that_is_no_address_is_refused(entry: str) -> None:
    with pytest.raises(ValueError, match=r"is not an IP address, a network such as 10\.0\.0\.0/8, or \*"):
        TrustedProxies([entry])


def test_the_client_is_the_rightmost_hop_that_is_not_a_trusted_proxy() -> None:
    trusted = TrustedProxies(["10.0.0.0/8"])
    assert trusted.client_of(["1.1.1.1", "2.2.2.2", "10.0.0.1"]) == "2.2.2.2"
    assert trusted.client_of(["10.0.0.2", "10.0.0.1"]) == "10.0.0.2"
    assert trusted.client_of([]) is None


async def seen(app: ForwardedHeaders, client: tuple[str, int] | None, *headers: tuple[bytes, bytes]) -> tuple[Any, str]:
    """The ``client`` and ``scheme`` the app behind ``app`` gets for a plain-HTTP request from ``client``."""
    scope: Scope = {"type": "http", "client": client, "scheme": "http", "headers": list(headers)}

    async def receive() -> Message:
        return {}

    async def send(message: Message) -> None:
        return None

    await app(scope, receive, send)
    return scope["client"], scope["scheme"]


async def noop(scope: Scope, receive: Any, send: Any) -> None:
    return None


async def test_a_trusted_proxys_headers_name_the_client_and_scheme() -> None:
    app = ForwardedHeaders(noop, TrustedProxies(["127.0.0.1"]))
    assert await seen(app, ("127.0.0.1", 5000), (b"x-forwarded-for", b"203.0.113.9, 127.0.0.1"),
                      (b"x-forwarded-proto", b"https")) == (("203.0.113.9", 0), "https")
    # several headers are one chain; a port on a hop is not part of its address; an unknown scheme is ignored
    assert await seen(app, ("127.0.0.1", 5000), (b"x-forwarded-for", b"198.51.100.1"),
                      (b"x-forwarded-for", b"203.0.113.9:4711"), (b"x-forwarded-proto", b"gopher")) == (
        ("203.0.113.9", 0), "http")
    assert await seen(app, ("127.0.0.1", 5000), (b"x-forwarded-for", b"[2001:db8::1]:443")) == (
        ("2001:db8::1", 0), "http")


async def test_anyone_elses_headers_are_ignored() -> None:
    app = ForwardedHeaders(noop, TrustedProxies(["10.0.0.1"]))
    assert await seen(app, ("192.0.2.5", 5000), (b"x-forwarded-for", b"203.0.113.9"),
                      (b"x-forwarded-proto", b"https")) == (("192.0.2.5", 5000), "http")
    nobody = ForwardedHeaders(noop, TrustedProxies())
    assert await seen(nobody, ("127.0.0.1", 5000), (b"x-forwarded-for", b"203.0.113.9")) == (
        ("127.0.0.1", 5000), "http")


async def test_an_address_taken_from_the_header_before_wiremcp_is_not_believed(
        caplog: pytest.LogCaptureFixture) -> None:
    nobody = ForwardedHeaders(noop, TrustedProxies())
    # uvicorn's --proxy-headers put the header's address in the scope, with port 0 (a socket's is never 0)
    assert await seen(nobody, ("203.0.113.9", 0), (b"x-forwarded-for", b"203.0.113.9")) == ((UNTRUSTED, 0), "http")
    assert await seen(nobody, ("198.51.100.4", 0), (b"x-forwarded-for", b"198.51.100.4")) == ((UNTRUSTED, 0), "http")
    # a request without the header keeps its address
    assert await seen(nobody, ("127.0.0.1", 0)) == (("127.0.0.1", 0), "http")
    warnings = [r for r in caplog.records if "WIREMCP_TRUSTED_PROXIES names no proxy" in r.getMessage()]
    assert len(warnings) == 1  # once per process, not per request
