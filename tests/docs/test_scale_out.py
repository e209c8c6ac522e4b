"""``docs/scale-out.md``, run: the two replicas on one real Redis serving one session, as typed, and the backend
example keeping the sessions it serves in its rows."""

from __future__ import annotations

import shlex
from pathlib import Path

import httpx
import pytest

from deploy.redis_server import redis_server_binary
from tests.support import http as raw
from tests.support.docs_pages import DOCS, accepting, background, block, exec_as_file, sh
from tests.support.http import ACCEPT_BOTH, asgi_client, free_port

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "scale-out.md"
CHECKED = {"two-replicas", "two-replicas-call", "two-replicas-out", "backend"}


def test_two_replicas_on_one_redis_serve_one_session_as_the_page_says(tmp_path: Path) -> None:
    """The page's commands as typed, their fixed ports replaced by free ones (and ``redis-server`` by the one
    the tests run, should the system have none): a session opened on the first replica is served by the second,
    which prints the page's answer, and a DELETE on one is a 404 on the other."""
    ports = {fixed: str(free_port()) for fixed in ("6379", "8001", "8002")}

    def ported(text: str) -> str:
        for fixed, port in ports.items():
            text = text.replace(fixed, port)
        return text

    redis, export, *replicas = ported(block(PAGE, "two-replicas").text).splitlines()
    assert redis.startswith("redis-server ")
    assert export.startswith("export ")
    assert all(replica.endswith(" &") for replica in (redis, *replicas))
    redis = redis.replace("redis-server", shlex.quote(redis_server_binary()), 1)
    first, second = (f"{export}; {replica.removesuffix(' &')}" for replica in replicas)
    with background(redis.removesuffix(" &"), cwd=tmp_path) as redis_process, \
            background(first) as replica_a, background(second) as replica_b:
        accepting(redis_process, int(ports["6379"]))
        accepting(replica_a, int(ports["8001"]))
        accepting(replica_b, int(ports["8002"]))
        script = ported(block(PAGE, "two-replicas-call").text)
        done = sh(script)
        assert done.returncode == 0, done.stderr
        assert done.stdout == block(PAGE, "two-replicas-out").text.strip(), done.stdout
        session = sh(script.split("\ncurl")[0] + '\necho "$sid"').stdout.strip()
        headers = {"mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
        deleted = httpx.delete(f"http://127.0.0.1:{ports['8001']}/mcp", headers=headers, timeout=10)
        gone = httpx.post(f"http://127.0.0.1:{ports['8002']}/mcp", json={"jsonrpc": "2.0", "id": 3, "method": "ping"},
                          headers={**headers, "accept": ACCEPT_BOTH}, timeout=10)
    assert deleted.status_code == 200, deleted.text
    assert gone.status_code == 404, gone.text


async def test_the_backend_example_keeps_the_sessions_it_serves_in_its_rows(tmp_path: Path) -> None:
    namespace = exec_as_file(PAGE, "backend", tmp_path / "server.py")
    sessions, app = namespace["sessions"], namespace["app"]
    async with asgi_client(app) as client:
        session = await raw.initialize(client, "/mcp")
        assert await session.call("ping") == {}
        assert list(sessions.rows) == [session.sid]
        assert sessions.rows[session.sid]["ready"] is True  # saved after notifications/initialized
        assert (await client.delete("/mcp", headers={"mcp-session-id": session.sid})).status_code == 200
        assert sessions.rows == {}
    await app.manager.close()
