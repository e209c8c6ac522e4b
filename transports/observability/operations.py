"""Operations endpoints in front of the MCP application: ``/healthz``, ``/readyz`` and ``/metrics``.

They are answered before the Host/Origin guard and without authentication (a Kubernetes probe
sends the pod's IP as ``Host`` and no token); everything else, lifespan included, goes on to the
wrapped app. On the way, each MCP request's session id (``Mcp-Session-Id``) is made known to the
logs and its W3C trace context headers to tracing, and its response status is counted.

- ``/healthz``: liveness, 200 ``{"status": "ok"}`` whenever the event loop answers.
- ``/readyz``: readiness, 200 ``{"status": "ready"}``, or 503 ``{"status": "unready", "checks": {...}}``
  while draining (or shutting down) or when a readiness check fails or is too slow; with the ``details``
  given (a gateway's ``upstreams``) either way.
- ``/metrics``: the Prometheus text format, when a ``Metrics`` is given.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING

from wiremcp.logs import SESSION_ID
from wiremcp.transports.asgi import ASGIApp, Message, Receive, Scope, SendASGI, header, respond, respond_json

if TYPE_CHECKING:
    from wiremcp.transports.observability.metrics import Metrics

log = logging.getLogger("wiremcp.operations")

ReadinessCheck = Callable[[], Awaitable[object]]
"""An async readiness check: it fails by raising, by returning ``False``, or by taking too long."""

TRACE_HEADERS: ContextVar[dict[str, str] | None] = ContextVar("wiremcp_trace_headers", default=None)
"""The ``traceparent`` / ``tracestate`` headers of the HTTP request being served, if it had any."""

_NO_STORE = [(b"cache-control", b"no-store")]


class Operations:
    """ASGI middleware: the operations endpoints, then ``app`` (normally an ``MCPHttpApp``).

    ``checks`` name the readiness checks (e.g. ``{"redis": redis.ping}``), each given ``check_timeout``
    seconds; they run concurrently on every ``/readyz``. ``draining`` tells when the process is going
    away (readiness fails first, so that load balancers stop sending before the connections close);
    a lifespan shutdown counts as draining too.
    """

    def __init__(self, app: ASGIApp, *, checks: Mapping[str, ReadinessCheck] | None = None,
                 check_timeout: float = 2.0, draining: Callable[[], bool] | None = None,
                 metrics: Metrics | None = None, health_path: str = "/healthz", ready_path: str = "/readyz",
                 metrics_path: str = "/metrics", details: Mapping[str, Callable[[], object]] | None = None) -> None:
        self.app = app
        self.details = dict(details or {})
        """What ``/readyz`` reports besides readiness, each read when asked (e.g. ``upstreams``: how each of a
        gateway's upstream servers is), whether ready or not; none of them makes the server unready."""
        self.checks = dict(checks or {})
        self.check_timeout = check_timeout
        self.draining = draining
        self.metrics = metrics
        self.shutting_down = False
        self._routes: dict[str, Callable[[SendASGI], Awaitable[None]]] = {
            health_path: self._health, ready_path: self._ready}
        if metrics is not None:
            self._routes[metrics_path] = self._metrics

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        kind = scope["type"]
        if kind != "http":
            await self.app(scope, self._watch_lifespan(receive) if kind == "lifespan" else receive, send)
            return
        route = self._routes.get(scope["path"])
        if route is not None:
            await self._operation(route, scope, send)
            return
        # MCP traffic, forwarded here rather than by a coroutine of its own: no frame more to resume with the
        # request's at each turn it waits.
        parent, state = header(scope, b"traceparent"), header(scope, b"tracestate")
        trace = None if parent is None and state is None else \
            {name: value for name, value in (("traceparent", parent), ("tracestate", state)) if value is not None}
        session_token = SESSION_ID.set(header(scope, b"mcp-session-id"))
        trace_token = TRACE_HEADERS.set(trace)
        try:
            metrics = self.metrics
            if metrics is None:
                await self.app(scope, receive, send)
                return
            method = scope["method"]

            def counting(message: Message) -> Awaitable[None]:  # no coroutine of its own: one frame less
                if message["type"] == "http.response.start":
                    metrics.http_response(method, message["status"])
                return send(message)

            await self.app(scope, receive, counting)
        finally:
            TRACE_HEADERS.reset(trace_token)
            SESSION_ID.reset(session_token)

    def _watch_lifespan(self, receive: Receive) -> Receive:
        async def watched() -> Message:
            message = await receive()
            if message["type"] == "lifespan.shutdown":
                self.shutting_down = True
            return message

        return watched

    # -- the operations endpoints ------------------------------------------------------------------
    async def _operation(self, route: Callable[[SendASGI], Awaitable[None]], scope: Scope,
                         send: SendASGI) -> None:
        if scope["method"] not in ("GET", "HEAD"):
            await respond(send, 405, headers=[(b"allow", b"GET, HEAD")])
            return
        if scope["method"] == "HEAD":
            await route(_headers_only(send))
        else:
            await route(send)

    async def _health(self, send: SendASGI) -> None:
        await respond_json(send, 200, {"status": "ok"}, _NO_STORE)

    async def _ready(self, send: SendASGI) -> None:
        checks = await self.readiness()
        details = {name: read() for name, read in self.details.items()}
        if all(result == "ok" for result in checks.values()):
            await respond_json(send, 200, {"status": "ready", **details}, _NO_STORE)
        else:
            await respond_json(send, 503, {"status": "unready", "checks": checks, **details}, _NO_STORE)

    async def _metrics(self, send: SendASGI) -> None:
        assert self.metrics is not None
        body, content_type = self.metrics.render()
        await respond(send, 200, body, content_type=content_type.encode("latin-1"), headers=_NO_STORE)

    async def readiness(self) -> dict[str, str]:
        """Each check's result: ``ok``, ``timeout`` or ``failed`` (with the exception's type, never its text);
        only ``draining`` while the process is going away."""
        if self.shutting_down or (self.draining is not None and self.draining()):
            return {"draining": "the server is shutting down"}
        names = list(self.checks)
        results = await asyncio.gather(*(self._run(name, self.checks[name]) for name in names))
        return dict(zip(names, results, strict=True))

    async def _run(self, name: str, check: ReadinessCheck) -> str:
        try:
            async with asyncio.timeout(self.check_timeout):
                passed = await check()
        except TimeoutError:
            log.warning("readiness check %s took longer than %ss", name, self.check_timeout)
            return "timeout"
        except Exception as exc:
            log.warning("readiness check %s failed: %s", name, type(exc).__name__)
            return f"failed: {type(exc).__name__}"
        return "failed" if passed is False else "ok"


def _headers_only(send: SendASGI) -> SendASGI:
    """HEAD: the same status and headers, no body."""

    async def out(message: Message) -> None:
        if message["type"] == "http.response.body":
            message = {**message, "body": b""}
        await send(message)

    return out
