"""``parse_target``: ``WIREMCP_REDIS_URL`` names one server, a Redis Cluster or Sentinel; a bad URL is one
clear ``ValueError`` that never shows the password."""

from __future__ import annotations

import pytest

from wiremcp.transports.redis.target import RedisTarget, parse_target


@pytest.mark.parametrize("url", ["redis://localhost:6379/0", "rediss://u:p@redis.example:6380/2",
                                 "unix:///run/redis.sock?db=1", "REDIS://host"])
def test_one_server_is_left_to_redis_py(url: str) -> None:
    assert parse_target(url) == RedisTarget("standalone", url)


def test_a_cluster_names_its_seed_nodes() -> None:
    target = parse_target("redis+cluster://10.0.0.1:7000,10.0.0.2,[::1]:7002")
    assert target.topology == "cluster"
    assert target.nodes == (("10.0.0.1", 7000), ("10.0.0.2", 6379), ("::1", 7002))
    assert (target.username, target.password, target.tls, target.db) == (None, None, False, 0)
    secure = parse_target("rediss+cluster://app:p%40ss@node-0.redis:6379")
    assert (secure.tls, secure.username, secure.password, secure.nodes) == (True, "app", "p@ss", (("node-0.redis", 6379),))
    assert parse_target("redis+cluster://:secret@n:1").password == "secret"


def test_sentinel_names_the_sentinels_the_service_and_the_database() -> None:
    target = parse_target("redis+sentinel://s1:26379,s2,s3:26380/wiremcp/3")
    assert target.topology == "sentinel"
    assert target.nodes == (("s1", 26379), ("s2", 26379), ("s3", 26380))
    assert (target.service, target.db) == ("wiremcp", 3)
    assert parse_target("rediss+sentinel://u:p@s1/mymaster").db == 0
    assert parse_target("rediss+sentinel://u:p@s1/mymaster").tls


@pytest.mark.parametrize(("url", "error"), [
    ("localhost:6379", "must be a URL"),
    ("http://localhost", "unknown scheme 'http'"),
    ("redis+clusters://a:1", "unknown scheme"),
    ("unix+cluster:///x", "unknown scheme"),
    ("redis+cluster://", "at least one host:port"),
    ("redis+cluster://a:1,,b:2", "no empty entry"),
    ("redis+cluster://a:1/0", "a cluster has no databases"),
    ("redis+cluster://a:99999", "bad port"),
    ("redis+cluster://:1", "has no host"),
    ("redis+cluster://a:1?ssl=true", "no query"),
    ("redis+sentinel://s1:26379", "names the service"),
    ("redis+sentinel://s1:26379/svc/x", "must be a number"),
    ("redis+sentinel://s1/svc/0/more", "names the service"),
])
def test_a_bad_url_is_one_clear_error(url: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_target(url)


def test_the_password_never_shows() -> None:
    assert parse_target("redis+cluster://u:s3cret@a:1").redacted == "redis+cluster://***@a:1"
    assert RedisTarget("standalone", "redis://user:s3cret@redis:6379/0").redacted == "redis://***@redis:6379/0"
    assert RedisTarget("standalone", "redis://redis:6379/0").redacted == "redis://redis:6379/0"
    with pytest.raises(ValueError, match="sentinel") as raised:
        parse_target("redis+sentinel://u:s3cret@s1")
    assert "s3cret" not in str(raised.value)
