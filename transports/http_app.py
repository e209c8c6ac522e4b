"""The HTTP application: the MCP endpoint (and the legacy SSE endpoints) behind the Host/Origin guard,
with a lifespan that shuts the session manager down cleanly. Mount it in any ASGI app."""

from __future__ import annotations

import gc
import logging
from collections.abc import Awaitable, Callable, Iterable

from wiremcp.errors import DefinitionError
from wiremcp.server import MCPServer
from wiremcp.shutdown import bounded
from wiremcp.transports.asgi import ASGIApp, Receive, Scope, SendASGI
from wiremcp.transports.drain import Drain
from wiremcp.transports.guard import LOOPBACK_HOSTS, LOOPBACK_ORIGINS, HostOriginGuard
from wiremcp.transports.legacy_sse import LegacySSEEndpoints
from wiremcp.transports.routes import Routes
from wiremcp.transports.sessions import SessionManager
from wiremcp.transports.streamable_http import HttpOptions, StreamableHTTPEndpoint

log = logging.getLogger("wiremcp.http")


class MCPHttpApp:
    """Routes ``path`` to the Streamable HTTP endpoint and, optionally, the 2024-11-05 SSE endpoints. Sessions,
    their streams' events and the link to other replicas are the backend's of the server's runtime
    (``Runtime(server, backend=...)``; in memory unless one is given)."""

    def __init__(self, server: MCPServer, *, path: str = "/mcp", options: HttpOptions | None = None,
                 idle_timeout: float = 1800.0, max_sessions: int = 10_000,
                 legacy_sse_path: str | None = "/sse", legacy_messages_path: str = "/messages",
                 allowed_hosts: Iterable[str] = LOOPBACK_HOSTS,
                 allowed_origins: Iterable[str] = LOOPBACK_ORIGINS,
                 authenticate: Callable[[ASGIApp], ASGIApp] | None = None, drain_seconds: float = 10.0,
                 drain_settle_seconds: float = 0.0) -> None:
        self.server = server
        self.path = path.rstrip("/") or "/"
        self.backend = server.runtime.backend
        self.manager = SessionManager(server, self.backend, idle_timeout=idle_timeout, max_sessions=max_sessions)
        self.endpoint = StreamableHTTPEndpoint(self.manager, options)
        self.on_startup: list[Callable[[], Awaitable[None]]] = []
        """Run after the backend has started (e.g. agreeing on shared keys)."""
        self.legacy = LegacySSEEndpoints(self.manager, messages_path=legacy_messages_path, options=options) \
            if legacy_sse_path else None
        self.drain = Drain(self.manager, self.legacy, seconds=drain_seconds, settle_seconds=drain_settle_seconds)
        self.legacy_sse_path = legacy_sse_path
        self.legacy_messages_path = legacy_messages_path
        self.routes = Routes(self.endpoint, self.path, self.legacy, legacy_sse_path, legacy_messages_path)
        routed: ASGIApp = self.routes if authenticate is None else authenticate(self.routes)
        # The DNS-rebinding guard comes first, then authentication (``auth.BearerAuth``), then the routes.
        self._guarded = HostOriginGuard(routed, allowed_hosts=allowed_hosts, allowed_origins=allowed_origins)

    @property
    def draining(self) -> bool:
        """Whether the process is going away (from the exit signal on): unready."""
        return self.drain.leaving or self.manager.draining

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
        elif kind == "http":
            if self.backend.link is not None:
                self.backend.ensure_started()  # mounted without its lifespan
            await self._guarded.forward(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: SendASGI) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                # What exists now (modules, the server definition) lives as long as the process:
                # keep it out of the collector's full passes, which otherwise cost p99 latency.
                try:
                    await self.backend.start()
                    for hook in self.on_startup:
                        await hook()
                    await self.server.runtime.lifespans.enter()
                except DefinitionError as exc:  # a lifespan's one line for the user (a remote that cannot run)
                    log.error("startup failed: %s", exc)
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                except Exception as exc:
                    log.exception("startup failed")
                    await send({"type": "lifespan.startup.failed", "message": str(exc)})
                    return
                self.drain.install()
                gc.freeze()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                # The shutdown sequence (unless SIGTERM already ran it), then the closing steps: each
                # bounded, so that nothing one of them waits for keeps the process from exiting.
                await bounded("the drain", self.drain.run(), self.drain.bound)
                await bounded("closing the stateless requests", self.endpoint.stateless.close())
                await bounded("closing the sessions", self.manager.close())
                await bounded("closing the server's lifespan", self.server.runtime.lifespans.exit())
                await bounded("closing the backend", self.backend.close())
                await send({"type": "lifespan.shutdown.complete"})
                return
