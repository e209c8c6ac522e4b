"""An MCP client's web site for the sign-in tests: it serves Client ID Metadata Documents (and whatever else
a test puts at a path) over HTTPS (``tests.support.tls``), counts the requests per path and keeps each
request's ``Host`` header; answers a test holds wait for its ``release`` event."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from tests.support.tls import Certificates, serve_https
from wiremcp.transports.asgi import Receive, Scope, SendASGI

EXAMPLE_URL = "https://app.example.com/oauth/client-metadata.json"


def document(url: str = EXAMPLE_URL, **changes: Any) -> dict[str, Any]:
    """A valid metadata document for ``url`` (the MCP specification's example), with ``changes`` (a None
    value removes the property)."""
    base: dict[str, Any] = {
        "client_id": url, "client_name": "Example MCP Client", "client_uri": "https://app.example.com",
        "logo_uri": "https://app.example.com/logo.png",
        "redirect_uris": ["http://127.0.0.1:3000/callback", "http://localhost:3000/callback"],
        "grant_types": ["authorization_code"], "response_types": ["code"], "token_endpoint_auth_method": "none"}
    base.update(changes)
    return {k: v for k, v in base.items() if v is not None}


Handler = Callable[[SendASGI], Awaitable[None]]
"""What a path answers: it sends the response."""


def json_answer(body: object, *, status: int = 200, content_type: str = "application/json",
                headers: Sequence[tuple[str, str]] = ()) -> Handler:
    """An answer with ``body`` (JSON-encoded unless it is bytes), its length, ``content_type`` and ``headers``."""
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()

    async def answer(send: SendASGI) -> None:
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", content_type.encode()),
                                (b"content-length", str(len(payload)).encode()),
                                *((k.encode(), v.encode()) for k, v in headers)]})
        await send({"type": "http.response.body", "body": payload})
    return answer


class ClientSite:
    """The MCP client's web site: each path answers with the handler a test put there (404 elsewhere);
    requests are counted per path, and each request's ``Host`` header is kept. ``release`` is what held
    answers wait for; ``arrived`` is set by each request."""

    def __init__(self) -> None:
        self.handlers: dict[str, Handler] = {}
        self.hits: Counter[str] = Counter()
        self.hosts: list[str] = []
        self.arrived = asyncio.Event()
        self.release = asyncio.Event()
        self.port = 0

    def url(self, path: str, host: str = "localhost") -> str:
        return f"https://{host}:{self.port}{path}"

    def serve(self, path: str, host: str = "localhost", **changes: Any) -> str:
        """A valid document at ``path`` (its URL as its ``client_id``); returns the URL."""
        url = self.url(path, host)
        self.handlers[path] = json_answer(document(url, **changes))
        return url

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        assert scope["type"] == "http"
        self.hits[scope["path"]] += 1
        self.hosts.append(dict(scope["headers"]).get(b"host", b"").decode())
        self.arrived.set()
        handler = self.handlers.get(scope["path"], json_answer({"error": "not found"}, status=404))
        await handler(send)


@contextlib.asynccontextmanager
async def serving_site(certificates: Certificates) -> AsyncIterator[ClientSite]:
    """A ``ClientSite`` served over HTTPS with ``certificates`` (its port set) for the block; whatever a path was
    made to hold back is released at the end, so that nothing it holds outlives the test."""
    site = ClientSite()
    try:
        async with serve_https(site, certificates) as port:
            site.port = port
            yield site
    finally:
        site.release.set()
