"""Fetches Client ID Metadata Documents the way the draft's security considerations ask (its SSRF, size,
redirect and caching sections), validates them (``ClientMetadata.validated``) and caches them.

- The URL's host is resolved first, and every address it resolves to must be public: no loopback, private,
  link-local, multicast, reserved, unspecified, unique-local or carrier-grade NAT address, nor one of them
  carried inside IPv6 (IPv4-mapped, 6to4, NAT64).
- The request goes to an address that was checked: the name is only the ``Host`` header, the TLS server name
  and what the certificate must be valid for, so a second DNS answer (a rebinding attacker's) cannot send it
  elsewhere. Connections are not reused across requests.
- No redirect is followed and a 200 is the only success; the answer must be JSON, uncompressed; its body
  stops being read past ``max_bytes`` (5 KiB, the draft's recommendation); the whole fetch (resolving,
  connecting, reading) has ``timeout`` seconds.
- Valid documents are cached per their ``Cache-Control`` within bounds (``metadata_cache``); refusals never
  are. Concurrent fetches of one URL share one request.

Every refusal is a ``ClientMetadataError`` whose message is safe to show the user; the details go to the
``wiremcp.auth`` log.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable, Collection, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

import httpx

from wiremcp.auth.oauth.client_metadata import (
    ClientMetadata,
    ClientMetadataError,
    InvalidClientMetadata,
    url_problem,
)
from wiremcp.auth.oauth.metadata_cache import (
    DEFAULT_TTL,
    MAX_TTL,
    MemoryMetadataCache,
    MetadataCache,
    cache_lifetime,
)

log = logging.getLogger("wiremcp.auth")

MAX_BYTES = 5 * 1024
"""The draft's recommended limit on a document's size."""
TIMEOUT = 5.0
REDIRECTS = frozenset({301, 302, 303, 307, 308})

_SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")
_RFC1918 = (ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("172.16.0.0/12"),
            ipaddress.ip_network("192.168.0.0/16"))
_UNIQUE_LOCAL = ipaddress.ip_network("fc00::/7")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""Resolves a host name and port to IP addresses (as strings); ``resolve`` is the system's."""


def special_use(address: Address) -> str | None:
    """What kind of special-use address ``address`` is ("loopback", "private", ...), or None for a public
    one. An IPv4 address inside IPv6 (IPv4-mapped, 6to4, NAT64) is judged as the IPv4 address it carries."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in _NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            return special_use(embedded)
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if isinstance(address, ipaddress.IPv4Address):
        if address in _SHARED_ADDRESS_SPACE:
            return "shared (carrier-grade NAT)"
        if any(address in network for network in _RFC1918):
            return "private"
    elif address in _UNIQUE_LOCAL:
        return "unique-local"
    if address.is_reserved:
        return "reserved"
    if not address.is_global:
        return "special-use"
    return None


async def resolve(host: str, port: int) -> list[str]:
    """The addresses the system resolver gives for ``host`` (in its order, each once)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


# -- the fetcher ------------------------------------------------------------------------------------------
def _verification_context(verify: ssl.SSLContext | str | bool) -> ssl.SSLContext | bool:
    if isinstance(verify, str):
        return ssl.create_default_context(cafile=verify)
    return verify


def _failed_tls(error: BaseException) -> bool:
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, ssl.SSLError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _is_json(content_type: str) -> bool:
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


class MetadataFetcher:
    """Fetches, validates and caches Client ID Metadata Documents, refusing what could turn the fetch into a
    request forgery (see the module's docstring). ``fetch(url)`` returns a ``ClientMetadata`` or raises a
    ``ClientMetadataError``.

    ``allow_private_networks``: fetch from any address, loopback and private ones included: for development
    and tests only. ``allowed_hosts``: when given, the only hosts a ``client_id`` URL may name (a trust
    policy; the draft lets an authorization server have one). ``verify``: the TLS trust (an SSL context, the
    path of a CA bundle, or True for the system's). ``client``: an httpx client to use instead of one of the
    fetcher's own (it must not go through a proxy, or the checked address is the proxy's business);
    ``cache``: where documents are kept (by default in memory, until ``use_cache`` gives it another, as the
    OAuth server gives it its store); ``resolver``: how host names are resolved."""

    def __init__(self, *, timeout: float = TIMEOUT, max_bytes: int = MAX_BYTES,
                 allow_private_networks: bool = False, allowed_hosts: Collection[str] | None = None,
                 verify: ssl.SSLContext | str | bool = True, client: httpx.AsyncClient | None = None,
                 cache: MetadataCache | None = None, default_ttl: float = DEFAULT_TTL, min_ttl: float = 0.0,
                 max_ttl: float = MAX_TTL, resolver: Resolver = resolve) -> None:
        if timeout <= 0 or max_bytes <= 0:
            raise ValueError("timeout and max_bytes must be positive")
        if not 0 <= min_ttl <= max_ttl:
            raise ValueError("the cache lifetimes must satisfy 0 <= min_ttl <= max_ttl")
        self.timeout = timeout
        self.max_bytes = max_bytes
        self.allow_private_networks = allow_private_networks
        self.allowed_hosts = None if allowed_hosts is None else frozenset(h.lower() for h in allowed_hosts)
        self.cache: MetadataCache = cache if cache is not None else MemoryMetadataCache()
        self._given_cache = cache is not None
        self.default_ttl, self.min_ttl, self.max_ttl = default_ttl, min_ttl, max_ttl
        self._resolve = resolver
        self._owns_client = client is None
        self._client = client if client is not None else httpx.AsyncClient(
            verify=_verification_context(verify), trust_env=False, follow_redirects=False,
            timeout=httpx.Timeout(timeout), limits=httpx.Limits(max_keepalive_connections=0))
        self._flights: dict[str, asyncio.Task[ClientMetadata]] = {}

    def use_cache(self, cache: MetadataCache) -> None:
        """Keep documents in ``cache`` from now on, unless the fetcher was made with a cache of its own."""
        if not self._given_cache:
            self.cache = cache

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> MetadataFetcher:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.aclose()

    async def fetch(self, url: str) -> ClientMetadata:
        """The validated metadata document at ``url`` (from the cache while it lasts), or
        ``ClientMetadataError``. Concurrent fetches of one URL share one request."""
        problem = url_problem(url)
        if problem:
            raise ClientMetadataError(problem)
        host = (urlsplit(url).hostname or "").lower()
        if self.allowed_hosts is not None and host not in self.allowed_hosts:
            raise ClientMetadataError("the client_id URL's host is not one this server accepts clients from")
        cached = await self.cache.get(url)
        if cached is not None:
            try:
                return ClientMetadata.validated(dict(cached), url)
            except InvalidClientMetadata:
                log.warning("a cached client metadata document for %s no longer validates; fetching it again", url)
        flight = self._flights.get(url)
        if flight is None:
            flight = self._flights[url] = asyncio.ensure_future(self._fetch(url))
            flight.add_done_callback(lambda done: self._landed(url, done))
        return await asyncio.shield(flight)

    def _landed(self, url: str, flight: asyncio.Task[ClientMetadata]) -> None:
        if self._flights.get(url) is flight:
            del self._flights[url]
        if not flight.cancelled():
            flight.exception()  # retrieved, whether or not a caller is still waiting for it

    async def _fetch(self, url: str) -> ClientMetadata:
        try:
            async with asyncio.timeout(self.timeout):
                document, cache_control = await self._download(url)
        except (TimeoutError, httpx.TimeoutException):
            raise ClientMetadataError(f"the client_id URL did not answer within {self.timeout:g} s") from None
        except httpx.HTTPError as error:
            log.info("fetching the client metadata document %s failed: %r", url, error)
            if _failed_tls(error):
                raise ClientMetadataError("the client_id URL's TLS certificate could not be verified") from None
            if isinstance(error, httpx.ConnectError):
                raise ClientMetadataError("the client_id URL could not be reached") from None
            raise ClientMetadataError("the request for the client_id URL failed") from None
        metadata = ClientMetadata.validated(document, url)
        ttl = cache_lifetime(cache_control, default=self.default_ttl, minimum=self.min_ttl, maximum=self.max_ttl)
        if ttl > 0:
            await self.cache.put(url, metadata.document, ttl)
        return metadata

    async def _addresses(self, host: str, port: int) -> list[str]:
        """The addresses to connect to for ``host``, in the resolver's order: every one must be allowed."""
        try:
            literal: Address | None = ipaddress.ip_address(host)
        except ValueError:
            literal = None
        try:
            found = [str(literal)] if literal is not None else list(await self._resolve(host, port))
            addresses = [ipaddress.ip_address(a.split("%", 1)[0]) for a in found]
        except (OSError, ValueError) as error:
            log.info("resolving %s for a client metadata document failed: %r", host, error)
            raise ClientMetadataError("the client_id URL's host could not be resolved") from None
        if not addresses:
            raise ClientMetadataError("the client_id URL's host could not be resolved")
        if not self.allow_private_networks:
            for address in addresses:
                kind = special_use(address)
                if kind:
                    raise ClientMetadataError(f"the client_id URL's host resolves to a {kind} address ({address})")
        return [str(address) for address in addresses]

    async def _download(self, url: str) -> tuple[object, str | None]:
        """The JSON document at ``url`` and its ``Cache-Control``, fetched from a checked address."""
        try:
            target = httpx.URL(url)
            host = target.raw_host.decode("ascii")
        except (httpx.InvalidURL, ValueError):
            raise ClientMetadataError("the client_id URL is not a valid URL") from None
        addresses = await self._addresses(host, target.port or 443)
        headers = {"Host": target.netloc.decode("ascii"), "Accept": "application/json",
                   "Accept-Encoding": "identity", "Connection": "close"}
        # A name stays the TLS server name and what the certificate must be valid for: only the address the
        # connection goes to is the checked one.
        extensions: dict[str, Any] = {"sni_hostname": host} if addresses != [host] else {}
        for address in addresses:  # the next one when an address refuses the connection (IPv6 without a route)
            request = self._client.build_request("GET", target.copy_with(host=address), headers=headers,
                                                 extensions=extensions, timeout=self.timeout)
            try:
                response = await self._client.send(request, stream=True, follow_redirects=False)
                break
            except httpx.ConnectError as error:
                if address == addresses[-1] or _failed_tls(error):
                    raise
        try:
            if response.status_code in REDIRECTS:
                raise ClientMetadataError(f"the client_id URL redirected ({response.status_code}), and redirects "
                                          "are not followed")
            if response.status_code != 200:
                raise ClientMetadataError(f"the client_id URL answered {response.status_code}, not 200")
            if not _is_json(response.headers.get("content-type", "")):
                raise ClientMetadataError("the client_id URL's answer is not JSON (its Content-Type is not "
                                          "application/json)")
            if response.headers.get("content-encoding", "identity").strip().lower() != "identity":
                raise ClientMetadataError("the client_id URL's answer is compressed, which is not accepted")
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_bytes:
                raise ClientMetadataError(f"the client_id URL's document is larger than {self.max_bytes} bytes")
            body = bytearray()
            async for chunk in response.aiter_raw():
                body += chunk
                if len(body) > self.max_bytes:
                    raise ClientMetadataError(f"the client_id URL's document is larger than {self.max_bytes} bytes")
        finally:
            await response.aclose()
        try:
            document = json.loads(bytes(body))
        except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
            raise ClientMetadataError("the client_id URL's answer is not JSON") from None
        return document, response.headers.get("cache-control")
