"""A replica started while its Redis is unreachable, on real processes (``wiremcp http`` and ``uvicorn
wiremcp:asgi``): it says so in one line naming the URL (without its password) and the reason, never a
traceback, serves with ``/readyz`` answering 503, and once a real ``redis-server`` comes up on that port it
becomes ready and serves sessions, with no process restart (what an orchestrator expects of a replica).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator, Mapping

import httpx
import pytest

from tests.support.cluster import until
from tests.support.http import (
    START_BOUND,
    UvicornProcess,
    free_port,
    initialize,
    run_uvicorn,
    run_wiremcp_http,
)
from tests.support.redis import RedisServer

SERVER = "tests.support.http_fixture_server:server"
PASSWORD = "s3cret-pw"

Serving = Callable[[str, Mapping[str, str]], contextlib.AbstractContextManager[UvicornProcess]]


def _uvicorn_wiremcp_asgi(server: str, env: Mapping[str, str]) -> contextlib.AbstractContextManager[UvicornProcess]:
    """``uvicorn wiremcp:asgi`` (the package's own name, as a user runs it), ``WIREMCP_SERVER`` naming ``server``."""
    return run_uvicorn(server, env, app="wiremcp:asgi")


@contextlib.contextmanager
def _redis_later(port: int) -> Iterator[RedisServer]:
    """A ``redis-server`` with a password, on ``port``, not started yet (the test starts it)."""
    with tempfile.TemporaryDirectory(prefix="wiremcp-redis-") as directory:
        redis = RedisServer(directory, port=port, password=PASSWORD)
        try:
            yield redis
        finally:
            redis.stop()


def _redis_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if "unreachable" in line or "Traceback" in line]


@pytest.mark.parametrize("serving", [run_wiremcp_http, _uvicorn_wiremcp_asgi], ids=["wiremcp-http", "uvicorn"])
async def test_a_replica_whose_redis_is_away_says_so_in_one_line_and_becomes_ready_when_it_comes(
        serving: Serving) -> None:
    port = free_port()
    with _redis_later(port) as redis, serving(SERVER, {"WIREMCP_REDIS_URL": redis.url,
                                                      "WIREMCP_LOG_LEVEL": "WARNING"}) as process:
        async with httpx.AsyncClient(timeout=10) as client:
            unready = await client.get(process.base_url + "/readyz")
            assert unready.status_code == 503, unready.text
            assert unready.json()["status"] == "unready"
            await until(lambda: bool(_redis_lines(process.output())), START_BOUND, "the unreachable line")
            output = process.output()
            assert _redis_lines(output) == [
                line for line in output.splitlines()
                if f"WARNING wiremcp.cluster: Redis at redis://***@127.0.0.1:{port}/0 is unreachable (Error 111 "
                   f"connecting to 127.0.0.1:{port}. Connection refused.): this replica is not ready (/readyz "
                   "answers 503) and tries again until it answers" in line], output
            assert len(_redis_lines(output)) == 1, output
            assert PASSWORD not in output
            assert "Traceback" not in output

            redis.start()

            async def ready() -> bool:
                return (await client.get(process.base_url + "/readyz")).status_code == 200

            await until(ready, START_BOUND, "/readyz 200 once Redis answers")
            session = await initialize(client, process.url)
            result = await session.call("tools/call", {"name": "echo", "arguments": {"text": "back"}})
            assert result["content"][0]["text"] == "back"
        output = process.stop_and_wait()
    assert PASSWORD not in output
    assert len(_redis_lines(output)) == 1, output


def test_the_line_says_why_for_a_host_that_does_not_resolve() -> None:
    """No process left behind: ``wiremcp http`` with a Redis host that does not resolve serves and says why."""
    env = {"WIREMCP_REDIS_URL": "redis://user:pw@no-such-host.invalid:6379/0", "WIREMCP_LOG_LEVEL": "WARNING"}
    with run_wiremcp_http(SERVER, env) as process:
        with httpx.Client(timeout=10) as client:
            assert client.get(process.base_url + "/readyz").status_code == 503
        output = process.stop_and_wait()
    lines = _redis_lines(output)
    assert len(lines) == 1, output
    assert "Redis at redis://***@no-such-host.invalid:6379/0 is unreachable (" in lines[0], output
    assert ":pw@" not in output
