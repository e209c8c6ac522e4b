"""The metadata fetcher against a real HTTPS server (uvicorn with a certificate made at test time,
``tests.support.tls``) serving each path the way a test sets (``tests.support.client_site``): documents,
redirects, oversized and held bodies, wrong content types; plus which addresses it refuses to reach."""

from __future__ import annotations

import asyncio
import ipaddress
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path

import httpx
import pytest

from tests.support.client_site import ClientSite, document, json_answer, serving_site
from tests.support.http import FakeClock, refusing_port
from tests.support.tls import Certificates, make_certificates
from wiremcp.auth.oauth.client_metadata import ClientMetadataError
from wiremcp.auth.oauth.metadata_cache import MemoryMetadataCache, StoreMetadataCache
from wiremcp.auth.oauth.metadata_fetcher import MAX_BYTES, MetadataFetcher, special_use
from wiremcp.grant_store import InMemoryGrantStore
from wiremcp.transports.asgi import SendASGI

BOUND = 10.0
"""Failure bound for anything a test waits for."""


# -- addresses --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("address", "kind"), [
    ("93.184.216.34", None), ("2606:2800:220:1:248:1893:25c8:1946", None), ("::ffff:93.184.216.34", None),
    ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"), ("::1", "loopback"),
    ("10.0.0.5", "private"), ("172.16.3.4", "private"), ("192.168.1.1", "private"),
    ("169.254.169.254", "link-local"), ("fe80::1", "link-local"),
    ("224.0.0.1", "multicast"), ("ff02::1", "multicast"),
    ("0.0.0.0", "unspecified"), ("::", "unspecified"),
    ("100.64.0.1", "shared (carrier-grade NAT)"), ("100.127.255.254", "shared (carrier-grade NAT)"),
    ("fd00::1", "unique-local"), ("fc00::1", "unique-local"),
    ("240.0.0.1", "reserved"),
    ("::ffff:10.0.0.5", "private"), ("::ffff:127.0.0.1", "loopback"), ("::ffff:169.254.169.254", "link-local"),
    ("2002:a00:5::1", "private"),  # 6to4 carrying 10.0.0.5
    ("64:ff9b::a00:5", "private"),  # NAT64 carrying 10.0.0.5
    ("192.0.2.1", "special-use"), ("198.18.0.1", "special-use"), ("2001:db8::1", "special-use"),
])
def test_special_use_addresses(address: str, kind: str | None) -> None:
    assert special_use(ipaddress.ip_address(address)) == kind


# -- the fetcher, against a real HTTPS server ------------------------------------------------------------
@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(Path(tmp_path_factory.mktemp("tls")), names=("localhost", "metadata.test"))


@pytest.fixture
async def site(certificates: Certificates) -> AsyncIterator[ClientSite]:
    async with serving_site(certificates) as out:
        yield out


@pytest.fixture
async def fetcher(certificates: Certificates) -> AsyncIterator[MetadataFetcher]:
    """A fetcher that may reach loopback addresses (the test site), trusting the test authority."""
    async with MetadataFetcher(allow_private_networks=True, verify=certificates.client_context()) as out:
        yield out


async def refusal(fetcher: MetadataFetcher, url: str) -> str:
    with pytest.raises(ClientMetadataError) as refused:
        await asyncio.wait_for(fetcher.fetch(url), BOUND)
    return refused.value.reason


async def test_a_good_document(site: ClientSite, fetcher: MetadataFetcher) -> None:
    url = site.serve("/oauth/client.json")
    metadata = await fetcher.fetch(url)
    assert metadata.client_id == url
    assert metadata.client_name == "Example MCP Client"
    assert metadata.redirect_uris == ("http://127.0.0.1:3000/callback", "http://localhost:3000/callback")
    assert site.hosts == [f"localhost:{site.port}"]


async def test_a_ca_path_as_verify(site: ClientSite, certificates: Certificates) -> None:
    url = site.serve("/client.json")
    async with MetadataFetcher(allow_private_networks=True, verify=str(certificates.ca)) as fetcher:
        assert (await fetcher.fetch(url)).client_id == url


async def test_a_client_of_ones_own(site: ClientSite, certificates: Certificates) -> None:
    url = site.serve("/client.json")
    async with httpx.AsyncClient(verify=certificates.client_context(), trust_env=False) as client:
        fetcher = MetadataFetcher(allow_private_networks=True, client=client)
        assert (await fetcher.fetch(url)).client_id == url
        await fetcher.aclose()
        assert not client.is_closed  # the fetcher closes only a client of its own


async def test_the_system_trust_store_refuses_the_test_authority(site: ClientSite) -> None:
    url = site.serve("/client.json")
    async with MetadataFetcher(allow_private_networks=True) as fetcher:
        assert await refusal(fetcher, url) == "the client_id URL's TLS certificate could not be verified"


async def test_a_client_id_that_is_not_the_url(site: ClientSite, fetcher: MetadataFetcher) -> None:
    site.handlers["/client.json"] = json_answer(document("https://other.example.com/client.json"))
    assert await refusal(fetcher, site.url("/client.json")) == (
        "the client metadata document's client_id is not the URL it was fetched from")


async def test_missing_fields(site: ClientSite, fetcher: MetadataFetcher) -> None:
    url = site.serve("/client.json", redirect_uris=None)
    assert await refusal(fetcher, url) == "the client metadata document has no redirect_uris"
    url = site.serve("/named.json", client_name=None)
    assert await refusal(fetcher, url) == "the client metadata document has no client_name"


@pytest.mark.parametrize(("url", "reason"), [
    ("http://localhost/client.json", "the client_id URL is not https"),
    ("client-1234", "the client_id URL is not https"),
    ("https://localhost/", "the client_id URL has no path"),
])
async def test_urls_refused_before_any_request(site: ClientSite, fetcher: MetadataFetcher, url: str,
                                               reason: str) -> None:
    assert await refusal(fetcher, url) == reason
    assert not site.hits


async def test_an_http_url_is_refused(site: ClientSite, fetcher: MetadataFetcher) -> None:
    site.serve("/client.json")
    assert await refusal(fetcher, f"http://localhost:{site.port}/client.json") == "the client_id URL is not https"
    assert not site.hits


async def test_loopback_is_refused_by_default(site: ClientSite, certificates: Certificates) -> None:
    named, literal = site.serve("/client.json"), site.serve("/ip.json", host="127.0.0.1")
    async with MetadataFetcher(verify=certificates.client_context()) as fetcher:
        assert (await refusal(fetcher, named)).startswith("the client_id URL's host resolves to a loopback address (")
        assert await refusal(fetcher, literal) == (
            "the client_id URL's host resolves to a loopback address (127.0.0.1)")
        assert await refusal(fetcher, "https://[::1]:1/client.json") == (
            "the client_id URL's host resolves to a loopback address (::1)")
    assert not site.hits


@pytest.mark.parametrize("url", ["https://2130706433/client.json", "https://127.1/client.json",
                                 "https://0x7f000001/client.json", "https://[::ffff:127.0.0.1]/client.json"])
async def test_other_spellings_of_loopback_are_refused(url: str) -> None:
    async with MetadataFetcher() as fetcher:
        assert (await refusal(fetcher, url)).startswith("the client_id URL's host resolves to a loopback address")


def answering(*answers: Sequence[str]) -> tuple[Callable[[str, int], Awaitable[Sequence[str]]], list[str]]:
    """A resolver giving ``answers`` in turn (the last one from then on), and the names it was asked."""
    asked: list[str] = []

    async def resolver(host: str, port: int) -> Sequence[str]:
        asked.append(host)
        return answers[min(len(asked), len(answers)) - 1]
    return resolver, asked


@pytest.mark.parametrize(("answer", "reason"), [
    (["10.0.0.5"], "the client_id URL's host resolves to a private address (10.0.0.5)"),
    (["93.184.216.34", "10.0.0.5"], "the client_id URL's host resolves to a private address (10.0.0.5)"),
    (["169.254.169.254"], "the client_id URL's host resolves to a link-local address (169.254.169.254)"),
    (["100.64.1.2"], "the client_id URL's host resolves to a shared (carrier-grade NAT) address (100.64.1.2)"),
    (["::ffff:192.168.0.1"], "the client_id URL's host resolves to a private address (::ffff:c0a8:1)"),
    (["fd12::1"], "the client_id URL's host resolves to a unique-local address (fd12::1)"),
    ([], "the client_id URL's host could not be resolved"),
    (["not an address"], "the client_id URL's host could not be resolved"),
])
async def test_special_use_answers_are_refused(answer: list[str], reason: str) -> None:
    resolver, asked = answering(answer)
    async with MetadataFetcher(resolver=resolver) as fetcher:
        assert await refusal(fetcher, "https://client.example.com/metadata.json") == reason
    assert asked == ["client.example.com"]


async def test_an_unresolvable_host(fetcher: MetadataFetcher) -> None:
    assert await refusal(fetcher, "https://no-such-host.invalid/client.json") == (
        "the client_id URL's host could not be resolved")


async def test_the_connection_goes_to_the_checked_address(site: ClientSite, fetcher: MetadataFetcher,
                                                          certificates: Certificates) -> None:
    """DNS pinning: the name is resolved once, and the request goes to that address even though a second
    answer (a rebinding attacker's) would name another; the name is still the Host header, the TLS server
    name and what the certificate is checked against (``metadata.test`` is in no DNS: only the pinned
    address makes the fetch work)."""
    url = site.serve("/client.json", host="metadata.test")
    resolver, asked = answering(["127.0.0.1"], ["10.0.0.5"])
    async with MetadataFetcher(allow_private_networks=True, verify=certificates.client_context(),
                               resolver=resolver) as pinned:
        metadata = await pinned.fetch(url)
    assert metadata.client_id == url
    assert asked == ["metadata.test"]
    assert site.hosts == [f"metadata.test:{site.port}"]


async def test_the_certificate_is_checked_against_the_name(site: ClientSite, certificates: Certificates) -> None:
    """The server's certificate is valid for 127.0.0.1, the address connected to, but not for
    ``elsewhere.test``, the name in the URL: refused."""
    url = site.serve("/client.json", host="elsewhere.test")
    resolver, _ = answering(["127.0.0.1"])
    async with MetadataFetcher(allow_private_networks=True, verify=certificates.client_context(),
                               resolver=resolver) as fetcher:
        assert await refusal(fetcher, url) == "the client_id URL's TLS certificate could not be verified"


async def test_the_next_address_when_one_refuses(site: ClientSite, certificates: Certificates) -> None:
    url = site.serve("/client.json", host="metadata.test")
    resolver, _ = answering(["127.0.0.2", "127.0.0.1"])  # nothing listens on 127.0.0.2 at this port
    async with MetadataFetcher(allow_private_networks=True, verify=certificates.client_context(),
                               resolver=resolver) as fetcher:
        assert (await fetcher.fetch(url)).client_id == url


async def test_a_connection_refused() -> None:
    resolver, _ = answering(["127.0.0.1"])
    with refusing_port() as port:
        async with MetadataFetcher(allow_private_networks=True, resolver=resolver) as fetcher:
            assert await refusal(fetcher, f"https://metadata.test:{port}/client.json") == (
                "the client_id URL could not be reached")


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
async def test_a_redirect_is_not_followed(site: ClientSite, fetcher: MetadataFetcher, status: int) -> None:
    target = site.serve("/elsewhere.json")
    site.handlers["/client.json"] = json_answer(b"", status=status, headers=[("location", target)])
    assert await refusal(fetcher, site.url("/client.json")) == (
        f"the client_id URL redirected ({status}), and redirects are not followed")
    assert site.hits == Counter({"/client.json": 1})


@pytest.mark.parametrize("status", [201, 204, 300, 304, 404, 500])
async def test_only_200_is_a_document(site: ClientSite, fetcher: MetadataFetcher, status: int) -> None:
    site.handlers["/client.json"] = json_answer(document(site.url("/client.json")), status=status)
    assert await refusal(fetcher, site.url("/client.json")) == f"the client_id URL answered {status}, not 200"


async def test_a_body_over_the_limit_is_refused_without_reading_it_all(site: ClientSite,
                                                                      fetcher: MetadataFetcher) -> None:
    """The server sends more than the limit, then holds the rest of its body until released: the fetch is
    refused meanwhile, so it stopped reading past the limit."""
    async def oversized(send: SendASGI) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})  # no length: chunked
        for _ in range(MAX_BYTES // 1024 + 1):
            await send({"type": "http.response.body", "body": b" " * 1024, "more_body": True})
        await site.release.wait()
        await send({"type": "http.response.body", "body": b"{}"})
    site.handlers["/client.json"] = oversized
    assert await refusal(fetcher, site.url("/client.json")) == (
        "the client_id URL's document is larger than 5120 bytes")
    site.release.set()


async def test_a_declared_length_over_the_limit_is_refused_before_the_body(site: ClientSite,
                                                                          fetcher: MetadataFetcher) -> None:
    async def declared(send: SendASGI) -> None:
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"6000")]})
        await site.release.wait()
        await send({"type": "http.response.body", "body": b" " * 6000})
    site.handlers["/client.json"] = declared
    assert await refusal(fetcher, site.url("/client.json")) == (
        "the client_id URL's document is larger than 5120 bytes")
    site.release.set()


async def test_a_smaller_limit(site: ClientSite, certificates: Certificates) -> None:
    url = site.serve("/client.json")
    async with MetadataFetcher(allow_private_networks=True, verify=certificates.client_context(),
                               max_bytes=100) as fetcher:
        assert await refusal(fetcher, url) == "the client_id URL's document is larger than 100 bytes"


@pytest.mark.parametrize("held", ["headers", "body"])
async def test_a_slow_server(site: ClientSite, certificates: Certificates, held: str) -> None:
    """The server holds its answer (or its body, after the headers) until the test releases it, which it
    does after the refusal: the fetch gave up at its time limit."""
    url = site.url("/client.json")
    answer = json_answer(document(url))

    async def slow(send: SendASGI) -> None:
        if held == "headers":
            await site.release.wait()
            await answer(send)
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": b"{", "more_body": True})
        await site.release.wait()
        await send({"type": "http.response.body", "body": b"}"})
    site.handlers["/client.json"] = slow
    async with MetadataFetcher(allow_private_networks=True, verify=certificates.client_context(),
                               timeout=0.5) as fetcher:
        assert await refusal(fetcher, url) == "the client_id URL did not answer within 0.5 s"
    site.release.set()


@pytest.mark.parametrize(("content_type", "body", "reason"), [
    ("text/html", b"<html></html>",
     "the client_id URL's answer is not JSON (its Content-Type is not application/json)"),
    ("text/plain", b"{}", "the client_id URL's answer is not JSON (its Content-Type is not application/json)"),
    ("application/json", b"{not json", "the client_id URL's answer is not JSON"),
    ("application/json", b"\xff\xfe", "the client_id URL's answer is not JSON"),
    ("application/json", b"[" * 5000, "the client_id URL's answer is not JSON"),
])
async def test_not_json(site: ClientSite, fetcher: MetadataFetcher, content_type: str, body: bytes,
                        reason: str) -> None:
    site.handlers["/client.json"] = json_answer(body, content_type=content_type)
    assert await refusal(fetcher, site.url("/client.json")) == reason


async def test_a_json_subtype_and_parameters_are_json(site: ClientSite, fetcher: MetadataFetcher) -> None:
    url = site.url("/client.json")
    site.handlers["/client.json"] = json_answer(document(url), content_type="application/cimd+json; charset=utf-8")
    assert (await fetcher.fetch(url)).client_id == url


async def test_a_compressed_answer_is_refused(site: ClientSite, fetcher: MetadataFetcher) -> None:
    site.handlers["/client.json"] = json_answer(b"\x1f\x8b", headers=[("content-encoding", "gzip")])
    assert await refusal(fetcher, site.url("/client.json")) == (
        "the client_id URL's answer is compressed, which is not accepted")


async def test_cached_within_max_age(site: ClientSite, certificates: Certificates) -> None:
    clock = FakeClock()
    url = site.url("/client.json")
    site.handlers["/client.json"] = json_answer(document(url), headers=[("cache-control", "public, max-age=60")])
    async with MetadataFetcher(allow_private_networks=True, verify=certificates.client_context(),
                               cache=MemoryMetadataCache(clock=clock)) as fetcher:
        first = await fetcher.fetch(url)
        assert await fetcher.fetch(url) == first
        assert site.hits["/client.json"] == 1
        clock.advance(60)
        assert await fetcher.fetch(url) == first
        assert site.hits["/client.json"] == 2


async def test_the_cache_lifetime_is_bounded(site: ClientSite, certificates: Certificates) -> None:
    clock = FakeClock()
    url = site.url("/client.json")
    site.handlers["/client.json"] = json_answer(document(url), headers=[("cache-control", "max-age=86400")])
    async with MetadataFetcher(allow_private_networks=True, verify=certificates.client_context(),
                               cache=MemoryMetadataCache(clock=clock), max_ttl=30) as fetcher:
        await fetcher.fetch(url)
        clock.advance(29)
        await fetcher.fetch(url)
        assert site.hits["/client.json"] == 1
        clock.advance(1)
        await fetcher.fetch(url)
        assert site.hits["/client.json"] == 2


async def test_no_cache_control_is_cached_for_the_default(site: ClientSite, certificates: Certificates) -> None:
    clock = FakeClock()
    url = site.serve("/client.json")
    async with MetadataFetcher(allow_private_networks=True, verify=certificates.client_context(),
                               cache=MemoryMetadataCache(clock=clock), default_ttl=120) as fetcher:
        await fetcher.fetch(url)
        clock.advance(119)
        await fetcher.fetch(url)
        assert site.hits["/client.json"] == 1


async def test_fetchers_sharing_a_store_cache_fetch_a_document_once(site: ClientSite,
                                                                     certificates: Certificates) -> None:
    url = site.serve("/client.json")
    store = InMemoryGrantStore()
    async with MetadataFetcher(allow_private_networks=True, verify=certificates.client_context()) as one, \
            MetadataFetcher(allow_private_networks=True, verify=certificates.client_context()) as other:
        for replica in (one, other):
            replica.use_cache(StoreMetadataCache(store))
        assert (await one.fetch(url)).client_id == url
        assert (await other.fetch(url)).client_id == url
    assert site.hits["/client.json"] == 1
    assert await store.get("metadata", url) == document(url)


async def test_a_cache_given_to_the_fetcher_is_kept() -> None:
    own = MemoryMetadataCache()
    async with MetadataFetcher(cache=own) as fetcher:
        fetcher.use_cache(StoreMetadataCache(InMemoryGrantStore()))
        assert fetcher.cache is own


async def test_a_cached_document_that_no_longer_validates_is_fetched_again(site: ClientSite,
                                                                           certificates: Certificates) -> None:
    url = site.serve("/client.json")
    store = InMemoryGrantStore()
    await store.put("metadata", url, {"client_id": url, "client_name": "Tampered"}, 600)  # no redirect_uris
    async with MetadataFetcher(allow_private_networks=True, verify=certificates.client_context(),
                               cache=StoreMetadataCache(store)) as fetcher:
        assert (await fetcher.fetch(url)).client_name == "Example MCP Client"
    assert site.hits["/client.json"] == 1
    assert await store.get("metadata", url) == document(url)


@pytest.mark.parametrize("cache_control", ["no-store", "no-cache", "max-age=0"])
async def test_not_cached(site: ClientSite, fetcher: MetadataFetcher, cache_control: str) -> None:
    url = site.url("/client.json")
    site.handlers["/client.json"] = json_answer(document(url), headers=[("cache-control", cache_control)])
    await fetcher.fetch(url)
    await fetcher.fetch(url)
    assert site.hits["/client.json"] == 2


async def test_refusals_are_not_cached(site: ClientSite, fetcher: MetadataFetcher) -> None:
    url = site.url("/client.json")
    site.handlers["/client.json"] = json_answer(document("https://other.example.com/c.json"),
                                                headers=[("cache-control", "max-age=600")])
    await refusal(fetcher, url)
    site.serve("/client.json")  # the client fixes its document: the next fetch sees it
    assert (await fetcher.fetch(url)).client_id == url
    assert site.hits["/client.json"] == 2


async def test_concurrent_fetches_share_one_request(site: ClientSite, fetcher: MetadataFetcher) -> None:
    url = site.url("/client.json")
    answer = json_answer(document(url), headers=[("cache-control", "no-store")])

    async def held(send: SendASGI) -> None:
        await site.release.wait()
        await answer(send)
    site.handlers["/client.json"] = held
    fetches = [asyncio.ensure_future(fetcher.fetch(url)) for _ in range(3)]
    await asyncio.wait_for(site.arrived.wait(), BOUND)
    site.release.set()
    results = await asyncio.wait_for(asyncio.gather(*fetches), BOUND)
    assert {r.client_id for r in results} == {url}
    assert site.hits["/client.json"] == 1


async def test_a_caller_that_goes_away_does_not_cancel_the_fetch_for_others(site: ClientSite,
                                                                            fetcher: MetadataFetcher) -> None:
    url = site.url("/client.json")
    answer = json_answer(document(url))

    async def held(send: SendASGI) -> None:
        await site.release.wait()
        await answer(send)
    site.handlers["/client.json"] = held
    leaving, staying = asyncio.ensure_future(fetcher.fetch(url)), asyncio.ensure_future(fetcher.fetch(url))
    await asyncio.wait_for(site.arrived.wait(), BOUND)
    leaving.cancel()
    site.release.set()
    assert (await asyncio.wait_for(staying, BOUND)).client_id == url
    assert leaving.cancelled()


async def test_allowed_hosts(site: ClientSite, certificates: Certificates) -> None:
    url = site.serve("/client.json")
    async with MetadataFetcher(allow_private_networks=True, verify=certificates.client_context(),
                               allowed_hosts={"LOCALHOST"}) as fetcher:
        assert (await fetcher.fetch(url)).client_id == url
        assert await refusal(fetcher, site.url("/client.json", host="127.0.0.1")) == (
            "the client_id URL's host is not one this server accepts clients from")


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="timeout and max_bytes must be positive"):
        MetadataFetcher(timeout=0)
    with pytest.raises(ValueError, match="min_ttl <= max_ttl"):
        MetadataFetcher(min_ttl=10, max_ttl=5)
