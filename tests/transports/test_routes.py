"""``wiremcp.transports.routes.Routes``: which endpoint an HTTP request is for."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from wiremcp.transports.asgi import Receive, Scope, SendASGI
from wiremcp.transports.routes import Routes


class Endpoint:
    def __init__(self) -> None:
        self.paths: list[str] = []

    async def answer(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        self.paths.append(scope["path"])


class Legacy:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def stream(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        self.calls.append("stream")

    async def message(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        self.calls.append("message")


async def _route(routes: Routes, path: str, root_path: str = "") -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    await routes({"type": "http", "method": "POST", "path": path, "root_path": root_path, "headers": []},
                 receive, send)
    return sent


@pytest.mark.parametrize(("path", "root"), [("/mcp", ""), ("/mcp/", ""), ("/api/mcp", "/api")])
async def test_the_endpoint_path_with_or_without_a_slash_and_under_a_root_path(path: str, root: str) -> None:
    endpoint = Endpoint()
    assert await _route(Routes(endpoint, "/mcp"), path, root) == []  # type: ignore[arg-type]
    assert endpoint.paths == [path]


async def test_the_legacy_pair_only_when_enabled_and_404_for_anything_else() -> None:
    endpoint, legacy = Endpoint(), Legacy()
    routes = Routes(endpoint, "/mcp", legacy, "/sse", "/messages")  # type: ignore[arg-type]
    await _route(routes, "/sse")
    await _route(routes, "/messages")
    assert legacy.calls == ["stream", "message"]
    without = Routes(endpoint, "/mcp")  # type: ignore[arg-type]
    sent = await _route(without, "/sse")
    assert sent[0]["status"] == 404
    assert orjson.loads(sent[1]["body"])["error"]["code"] == -32600
    assert endpoint.paths == []
