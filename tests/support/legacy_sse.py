"""The deprecated HTTP+SSE transport (2024-11-05) by hand: ``connect`` opens ``GET /sse`` and reads the
``endpoint`` event; ``LegacyClient`` POSTs messages there and reads every answer from the one stream."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx

from tests.support.http import CLIENT_INFO, SSEReader, request_body


@dataclass
class LegacyClient:
    http: httpx.AsyncClient
    base: str
    endpoint: str
    events: SSEReader

    @property
    def session_id(self) -> str:
        return self.endpoint.partition("session_id=")[2]

    async def post(self, body: Any, **headers: str) -> httpx.Response:
        return await self.http.post(self.base + self.endpoint, content=json.dumps(body),
                                    headers={"content-type": "application/json", **headers})

    async def send(self, body: Any) -> None:
        response = await self.post(body)
        assert response.status_code == 202, response.text
        assert response.text == "Accepted"

    async def rpc(self, rid: int, method: str, params: dict[str, Any] | None = None) -> Any:
        """Send a request; its answer is the next message on the stream."""
        await self.send(request_body(rid, method, params))
        answer = await self.events.message()
        assert answer["id"] == rid, answer
        return answer


@contextlib.asynccontextmanager
async def connect(http: httpx.AsyncClient, base: str) -> AsyncIterator[LegacyClient]:
    async with http.stream("GET", base + "/sse", headers={"accept": "text/event-stream"}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = SSEReader(response)
        first = await events.next()
        assert first.event == "endpoint"
        assert first.data is not None
        assert first.data.startswith("/messages?session_id=")
        yield LegacyClient(http, base, first.data, events)


async def handshake(client: LegacyClient, version: str = "2024-11-05") -> Any:
    answer = await client.rpc(1, "initialize", {"protocolVersion": version, "capabilities": {},
                                                "clientInfo": CLIENT_INFO})
    await client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return answer
