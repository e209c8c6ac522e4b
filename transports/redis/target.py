"""Which Redis a deployment uses, from ``WIREMCP_REDIS_URL``: one server, a Redis Cluster, or a primary that
Sentinel watches.

- ``redis://[user:password@]host[:port][/db]``, ``rediss://...``, ``unix:///path?db=N``: one server (or a
  managed endpoint that fails over behind one address), as redis-py reads such a URL;
- ``redis+cluster://[user:password@]host:port[,host:port...]``, ``rediss+cluster://...``: a Redis Cluster
  (Redis or Valkey 7 and later: sharded pub/sub); the nodes named are where discovery starts;
- ``redis+sentinel://[user:password@]host:port[,host:port...]/service[/db]``, ``rediss+sentinel://...``:
  the sentinels, and the name they watch the primary under; the user and password are the data nodes'.

A URL that is none of these is a ``ValueError`` naming what is wrong (never the password).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote

Topology = Literal["standalone", "cluster", "sentinel"]

DEFAULT_PORT = {"standalone": 6379, "cluster": 6379, "sentinel": 26379}


@dataclass(frozen=True, slots=True)
class RedisTarget:
    topology: Topology
    url: str
    """The URL as given (a standalone server is opened from it by redis-py itself)."""
    nodes: tuple[tuple[str, int], ...] = ()
    """A cluster's seed nodes, or the sentinels."""
    service: str = ""
    """The name Sentinel watches the primary under."""
    db: int = 0
    username: str | None = None
    password: str | None = None
    tls: bool = False

    @property
    def redacted(self) -> str:
        """The URL fit for logs: no password."""
        scheme, sep, rest = self.url.partition("://")
        if "@" in rest.split("/", 1)[0]:
            rest = "***@" + rest.split("@", 1)[1]
        return scheme + sep + rest


def parse_target(url: str) -> RedisTarget:
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(f"WIREMCP_REDIS_URL must be a URL such as redis://host:6379/0, got {_safe(url)!r}")
    base, _, variant = scheme.lower().partition("+")
    if base not in ("redis", "rediss", "unix") or variant not in ("", "cluster", "sentinel") or (
            base == "unix" and variant):
        raise ValueError(f"WIREMCP_REDIS_URL: unknown scheme {scheme!r} (redis, rediss, unix, redis+cluster, "
                         "rediss+cluster, redis+sentinel or rediss+sentinel)")
    if not variant:
        return RedisTarget("standalone", url)
    topology: Topology = "cluster" if variant == "cluster" else "sentinel"
    if "?" in rest or "#" in rest:
        raise ValueError(f"WIREMCP_REDIS_URL: a {scheme} URL takes no query or fragment")
    authority, _, path = rest.partition("/")
    username = password = None
    if "@" in authority:
        userinfo, authority = authority.rsplit("@", 1)
        user, colon, secret = userinfo.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    nodes = tuple(_node(text, DEFAULT_PORT[topology], scheme) for text in authority.split(","))
    parts = [part for part in path.split("/") if part]
    if topology == "cluster":
        if parts:
            raise ValueError(f"WIREMCP_REDIS_URL: a cluster has no databases: nothing may follow the nodes "
                             f"in {_safe(url)!r}")
        return RedisTarget(topology, url, nodes, username=username, password=password, tls=base == "rediss")
    if not parts or len(parts) > 2:
        raise ValueError(f"WIREMCP_REDIS_URL: a sentinel URL names the service after the sentinels, "
                         f"{scheme}://host:26379,host:26379/<service>[/<db>]; got {_safe(url)!r}")
    db = 0
    if len(parts) == 2:
        if not parts[1].isdigit():
            raise ValueError(f"WIREMCP_REDIS_URL: the database must be a number, got {parts[1]!r}")
        db = int(parts[1])
    return RedisTarget(topology, url, nodes, service=unquote(parts[0]), db=db, username=username,
                       password=password, tls=base == "rediss")


def _node(text: str, default_port: int, scheme: str) -> tuple[str, int]:
    if not text:
        raise ValueError(f"WIREMCP_REDIS_URL: a {scheme} URL needs at least one host:port, with no empty entry")
    if text.startswith("["):  # an IPv6 address
        host, _, tail = text[1:].partition("]")
        port_text = tail[1:] if tail.startswith(":") else ""
        if tail and not tail.startswith(":"):
            raise ValueError(f"WIREMCP_REDIS_URL: bad node {text!r}")
    else:
        host, _, port_text = text.partition(":")
    if not host:
        raise ValueError(f"WIREMCP_REDIS_URL: node {text!r} has no host")
    if not port_text:
        return host, default_port
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"WIREMCP_REDIS_URL: node {text!r} has a bad port")
    return host, int(port_text)


def _safe(url: str) -> str:
    return RedisTarget("standalone", url).redacted
