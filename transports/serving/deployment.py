"""The composition root behind ``wiremcp:asgi`` and the ``wiremcp`` command: wires the transports around the core.

Only this module imports the edges; ``wiremcp.__getattr__`` loads it lazily, so importing the
core never imports a transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from wiremcp.backend import Backend
from wiremcp.errors import DefinitionError
from wiremcp.logs import setup_logging
from wiremcp.request_state import RequestStateSealer
from wiremcp.runtime import Runtime
from wiremcp.server import MCPServer
from wiremcp.task_runner import TaskSettings
from wiremcp.transports.serving.loader import checked, load_server
from wiremcp.transports.serving.settings import ConfigError, Settings, warn_unknown_variables

if TYPE_CHECKING:  # the HTTP stack is imported by build_http_app: ``wiremcp stdio`` starts without it
    from wiremcp.transports.asgi import ASGIApp
    from wiremcp.transports.http_app import MCPHttpApp
    from wiremcp.transports.observability.metrics import Metrics
    from wiremcp.transports.observability.operations import Operations, ReadinessCheck
    from wiremcp.transports.redis.backend import RedisBackend

log = logging.getLogger("wiremcp")


@contextlib.contextmanager
def setting(name: str) -> Iterator[None]:
    """A ``ValueError`` from what a setting's value is given to is that setting's ``ConfigError``: one line
    naming it, exit status 2."""
    try:
        yield
    except ValueError as exc:
        raise ConfigError(f"{name}: {exc}") from None


def build_runtime(server: MCPServer, settings: Settings, redis: RedisBackend | None = None) -> Runtime:
    """What serves ``server`` under ``settings``: ``requestState`` keys, the task settings and the backend
    (``redis``, or in memory with the event store's settings), all given to the runtime as it is made. A
    runtime the server's own code made is kept (its settings are its code's), unless Redis is configured:
    its stores can only be given to a runtime made here. ``WIREMCP_ERROR_DETAILS=true`` turns the
    server's ``error_details`` on (it never turns off what the code turned on)."""
    if settings.error_details:
        server.error_details = True
    if server.has_own_runtime:
        if redis is not None:
            raise ConfigError("WIREMCP_REDIS_URL is set but the server's module makes its own Runtime: leave the "
                              "runtime to wiremcp, or give it the Redis stores yourself and unset WIREMCP_REDIS_URL")
        log.debug("serving with the server's own Runtime; WIREMCP_TASK_*, WIREMCP_REQUEST_STATE_* and "
                  "WIREMCP_EVENT_STORE_* do not apply")
        return server.runtime
    with setting("WIREMCP_REQUEST_STATE_KEYS"):
        sealer = RequestStateSealer.from_strings(settings.request_state_keys, ttl=settings.request_state_ttl_seconds)
    tasks = TaskSettings(default_ttl_ms=max(1, round(settings.task_ttl_seconds * 1000)),
                         poll_interval_ms=max(1, settings.task_poll_interval_ms),
                         max_running_per_owner=max(1, settings.max_tasks_per_owner))
    backend = redis or Backend.in_memory(max_events=settings.event_store_max_events,
                                         max_event_bytes=settings.event_store_max_bytes,
                                         max_event_age=settings.event_store_max_age_seconds)
    return Runtime(server, backend=backend, request_states=sealer, tasks=tasks)


def build_auth(settings: Settings, on_failure: Callable[[str], None] | None = None,
               ) -> Callable[[ASGIApp], ASGIApp] | None:
    """Bearer-token authentication for the MCP routes, when ``WIREMCP_AUTH_RESOURCE`` or
    ``WIREMCP_AUTH_STATIC_TOKENS`` is set (``on_failure``: called with the reason of each refusal). Static
    tokens need neither a resource nor an issuer: they name no audience and come from no authorization
    server, so the metadata's resource is the URL each request was served at and no server is listed."""
    if settings.oauth_provider:  # the OAuth server's own tokens: see build_http_app
        return None
    if not settings.auth_resource and not settings.auth_static_tokens:
        if settings.auth_jwks_url or settings.auth_introspection_url:
            raise ConfigError("WIREMCP_AUTH_RESOURCE (the canonical URL of the MCP endpoint) is required for auth")
        return None
    from wiremcp.auth.introspection import IntrospectionVerifier
    from wiremcp.auth.jwt_verifier import JWKSVerifier
    from wiremcp.auth.metadata import ProtectedResource
    from wiremcp.auth.middleware import BearerAuth
    from wiremcp.auth.verifier import StaticTokenVerifier, TokenVerifier

    if (settings.auth_jwks_url or settings.auth_introspection_url) and not settings.auth_resource:
        raise ConfigError("WIREMCP_AUTH_RESOURCE (the canonical URL of the MCP endpoint) is required for auth")
    if (settings.auth_jwks_url or settings.auth_introspection_url) and not settings.auth_issuer:
        raise ConfigError("WIREMCP_AUTH_ISSUER (the authorization server's issuer URL) is required for auth")
    verifier: TokenVerifier
    if settings.auth_jwks_url:
        with setting("WIREMCP_AUTH_ALGORITHMS"):  # an algorithm it does not take (symmetric, none, unknown)
            verifier = JWKSVerifier(jwks_url=settings.auth_jwks_url, issuer=settings.auth_issuer,
                                    audience=settings.auth_resource, algorithms=settings.auth_algorithms)
    elif settings.auth_introspection_url:
        if not (settings.auth_client_id and settings.auth_client_secret):
            raise ConfigError("introspection needs WIREMCP_AUTH_CLIENT_ID and WIREMCP_AUTH_CLIENT_SECRET")
        verifier = IntrospectionVerifier(endpoint=settings.auth_introspection_url, client_id=settings.auth_client_id,
                                         client_secret=settings.auth_client_secret, audience=settings.auth_resource,
                                         issuer=settings.auth_issuer, service_tokens=settings.auth_service_tokens)
    elif settings.auth_static_tokens:
        log.warning("static bearer tokens are for development only")
        with setting("WIREMCP_AUTH_STATIC_TOKENS"):
            verifier = StaticTokenVerifier.from_pairs(settings.auth_static_tokens, issuer=settings.auth_issuer or "static")
    else:
        raise ConfigError("auth needs WIREMCP_AUTH_JWKS_URL, WIREMCP_AUTH_INTROSPECTION_URL or WIREMCP_AUTH_STATIC_TOKENS")
    with setting("WIREMCP_AUTH_RESOURCE"):
        resource = ProtectedResource(settings.auth_resource, (settings.auth_issuer,) if settings.auth_issuer else (),
                                     settings.auth_scopes_supported or settings.auth_scopes, path=settings.path)
    return lambda app: BearerAuth(app, verifier=verifier, resource=resource, required_scopes=settings.auth_scopes,
                                  on_failure=on_failure)


def build_http_app(server: MCPServer, settings: Settings) -> ASGIApp:
    from wiremcp.transports.forwarded import ForwardedHeaders, TrustedProxies
    from wiremcp.transports.http_app import MCPHttpApp
    from wiremcp.transports.streamable_http import HttpOptions

    options = HttpOptions(json_response=settings.json_response, max_body_bytes=settings.max_message_bytes,
                          sse_after=settings.sse_after_seconds, sse_keepalive=settings.sse_keepalive_seconds,
                          sse_retry_ms=settings.sse_retry_ms)
    from wiremcp.transports.serving.oauth import build_oauth

    oauth = build_oauth(settings)
    redis = build_redis(settings)
    runtime = build_runtime(server, settings, redis)
    metrics = build_metrics(settings)
    on_failure = metrics.auth_failure if metrics is not None else None
    if oauth is not None:
        oauth.use_store(runtime.backend.grants)
    authenticate = oauth.authenticate(settings.auth_scopes, settings.path, on_failure) if oauth is not None \
        else build_auth(settings, on_failure)
    mcp = MCPHttpApp(server, path=settings.path, options=options, idle_timeout=settings.session_idle_seconds,
                     max_sessions=settings.max_sessions,
                     legacy_sse_path="/sse" if settings.legacy_sse and redis is None else None,
                     allowed_hosts=settings.allowed_hosts, allowed_origins=settings.allowed_origins,
                     authenticate=authenticate, drain_seconds=settings.drain_seconds,
                     drain_settle_seconds=settings.drain_settle_seconds)
    checks: dict[str, ReadinessCheck] = {}
    if redis is not None:
        checks["redis"] = redis.link.ping
        if not settings.request_state_keys:  # agreed on in Redis: ready once it is (Redis may answer later)
            backend = redis
            mcp.on_startup.append(lambda: backend.share_request_state_key(runtime.request_states))
            checks["request-state key"] = backend.request_state_key_shared
    with setting("WIREMCP_TRUSTED_PROXIES"):
        trusted = TrustedProxies(settings.trusted_proxies)
    served = None if oauth is None else oauth.wrap(mcp)
    from wiremcp.transports.closing import ClosingConnections

    closing = ClosingConnections(build_operations(mcp, metrics, checks or None, served), lambda: mcp.draining)
    return ForwardedHeaders(closing, trusted)


def build_redis(settings: Settings) -> RedisBackend | None:
    """The Redis backend when ``WIREMCP_REDIS_URL`` is set: sessions, events, routing and the bus."""
    if not settings.redis_url:
        return None
    from wiremcp.transports.redis.backend import RedisBackend
    from wiremcp.transports.redis.target import parse_target

    try:
        target = parse_target(settings.redis_url)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if settings.redis_wait_replicas < 0:
        raise ConfigError(f"WIREMCP_REDIS_WAIT_REPLICAS must be 0 or more, got {settings.redis_wait_replicas}")
    if settings.redis_wait_replicas and not 0 < settings.redis_wait_timeout_ms < settings.redis_timeout_seconds * 1000:
        raise ConfigError(f"WIREMCP_REDIS_WAIT_TIMEOUT_MS must be more than 0 and less than WIREMCP_REDIS_TIMEOUT_SECONDS "
                          f"({settings.redis_timeout_seconds * 1000:g} ms), got {settings.redis_wait_timeout_ms}")
    backend = RedisBackend.connect(target, prefix=settings.redis_prefix,
                                   timeout=settings.redis_timeout_seconds, replica=settings.replica_id,
                                   lease=settings.replica_lease_seconds, idle_timeout=settings.session_idle_seconds,
                                   max_events_per_stream=settings.event_store_max_events,
                                   max_event_age=settings.event_store_max_age_seconds,
                                   session_cache=settings.session_cache_seconds,
                                   wait_replicas=settings.redis_wait_replicas,
                                   wait_timeout_ms=settings.redis_wait_timeout_ms)
    log.info("sessions in Redis (%s) at %s as replica %s", target.topology, target.redacted,
             backend.link.replica)
    if settings.redis_wait_replicas:
        log.info("events count as stored once %d replicas have them (WAIT, %d ms at most)",
                 settings.redis_wait_replicas, settings.redis_wait_timeout_ms)
    return backend


def build_metrics(settings: Settings) -> Metrics | None:
    """The deployment's Prometheus metrics, unless ``WIREMCP_METRICS`` is off."""
    if not settings.metrics:
        return None
    from wiremcp.transports.observability.metrics import Metrics

    return Metrics()


def build_operations(mcp: MCPHttpApp, metrics: Metrics | None = None,
                     checks: Mapping[str, ReadinessCheck] | None = None, app: ASGIApp | None = None) -> Operations:
    """``/healthz``, ``/readyz`` (unready while draining or when one of ``checks`` fails) and ``/metrics``
    in front of ``app`` (``mcp``, or what wraps it: the OAuth server's endpoints); ``mcp``'s requests observed by
    ``metrics`` and, when configured, OpenTelemetry."""
    from wiremcp.transports.observability.operations import Operations

    if metrics is not None:
        metrics.instrument(mcp)
    enable_tracing(mcp.server)
    remote = sys.modules.get("wiremcp.transports.gateway")  # imported where a remote child is defined, only there
    details = remote.readiness_details(mcp.server) if remote is not None else None
    return Operations(app or mcp, checks=checks, draining=lambda: mcp.draining, metrics=metrics, details=details)


def enable_tracing(server: MCPServer) -> bool:
    """Trace ``server``'s requests if OpenTelemetry is installed and a tracer provider is configured."""
    if "opentelemetry.trace" not in sys.modules and "OTEL_PYTHON_TRACER_PROVIDER" not in os.environ:
        return False  # nothing configured one (setting it imports opentelemetry.trace): not imported for nothing
    try:
        from wiremcp.transports.observability.tracing import Tracing, tracing_observer
    except ImportError:
        return False
    if any(isinstance(o, Tracing) for o in server.runtime.observers):
        return True
    observer = tracing_observer()
    if observer is None:
        return False
    server.runtime.observe(observer)
    return True


def build_asgi(settings: Settings | None = None) -> ASGIApp:
    """The default deployment: the server named by ``WIREMCP_SERVER`` at ``WIREMCP_PATH``."""
    settings = settings or Settings.from_env()
    setup_logging(settings.log_level, settings.log_format)
    warn_unknown_variables()
    app = build_http_app(load_server(settings.server), settings)
    say_the_endpoint(settings.path)
    return app


class _EndpointInStartupLine(logging.Filter):
    """uvicorn's "Uvicorn running on http://HOST:PORT" line with the MCP endpoint's path: the URL a host is
    given (``http://127.0.0.1:8000/mcp``), not the bare origin."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and record.msg.startswith("Uvicorn running on ") and "://" in record.msg \
                and isinstance(record.args, tuple) and len(record.args) == 3:
            record.msg = record.msg.replace(":%d", ":%d" + self.path.replace("%", "%%"), 1)
            record.__dict__.pop("color_message", None)  # uvicorn's coloured copy of the old text
        return True


def say_the_endpoint(path: str) -> None:
    """Have uvicorn's startup line name the MCP endpoint at ``path`` (once per process)."""
    logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _EndpointInStartupLine) for f in logger.filters):
        logger.addFilter(_EndpointInStartupLine(path))


def default_asgi() -> ASGIApp:
    """``wiremcp:asgi`` (and ``app:asgi``): ``build_asgi()``, except that a bad setting or server spec
    ends the process with one line on stderr and exit status 2, not a traceback from the ASGI server."""
    try:
        return build_asgi()
    except ConfigError as exc:
        exc.exit()


def claim_stdio() -> None:
    """Take the process's stdin and stdout for the stdio wire (``wiremcp.transports.stdio.claim_stdio``);
    ``wiremcp stdio`` does so before it imports the server's module, so nothing it prints reaches the wire."""
    from wiremcp.transports.stdio import claim_stdio as claim

    claim()


def serve_stdio(server: MCPServer, settings: Settings) -> None:
    """Serve ``server`` on the process's stdin and stdout (the wire ``claim_stdio`` took, or takes now)."""
    from wiremcp.transports.stdio import serve_stdio as serve

    build_runtime(server, settings)
    enable_tracing(server)
    run_loop(serve(server, max_message_bytes=settings.max_message_bytes, drain_seconds=settings.stdio_drain_seconds))


def run_loop(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on uvloop where it is installed (a dependency where it builds), as uvicorn does for HTTP;
    else on asyncio's own loop."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(main)
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main)


_TRANSPORTS = {"streamable-http": "http"}
"""Other names of a transport: ``streamable-http`` is what FastMCP and the official SDK call ``http``."""


def serve(load: Callable[[Settings], MCPServer], transport: str, *, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve the server ``load`` gives, with the environment's settings, on stdio or Streamable HTTP. On stdio,
    stdin and stdout are taken for the wire before ``load`` runs, so that neither a print() at the import of
    the server's module nor a child process started later can write to or read from them; logs go to stderr."""
    settings = Settings.from_env()
    transport = _TRANSPORTS.get(transport, transport)
    if transport not in ("stdio", "http"):
        hint = ": 'http' serves the HTTP+SSE transport at /sse too" if transport == "sse" else ""
        raise ConfigError(f"transport must be 'stdio' or 'http' ('streamable-http'), not {transport!r}{hint}")
    if transport == "stdio":
        claim_stdio()
    setup_logging(settings.log_level, settings.log_format)
    warn_unknown_variables()
    server = load(settings)
    try:
        if transport == "stdio":
            serve_stdio(server, settings)  # on the wire claimed above
        else:
            serve_http(server, host=host, port=port, settings=settings)
    except DefinitionError as exc:  # raised as the server's lifespan started (a remote child that cannot run)
        raise ConfigError(str(exc)) from None


def run(server: MCPServer, transport: str, *, host: str, port: int) -> None:
    """``MCPServer.run``: ``serve`` it; a bad setting is one line on stderr and exit status 2."""
    try:
        serve(lambda _: checked(server), transport, host=host, port=port)
    except ConfigError as exc:
        exc.exit()


def serve_http(server: MCPServer, *, host: str, port: int, settings: Settings) -> None:
    import uvicorn

    say_the_endpoint(settings.path)
    # uvicorn's logs go through ours (stderr, format, redaction); forwarded headers are wiremcp's to trust
    uvicorn.run(build_http_app(server, settings), host=host, port=port, log_level=settings.log_level.lower(),
                lifespan="on", log_config=None, proxy_headers=False)


def serve_http_reloading(*, host: str, port: int, settings: Settings, watch: list[str]) -> None:
    """``wiremcp:asgi`` (the server named by ``WIREMCP_SERVER``) in a child process that uvicorn restarts
    whenever a Python file under ``watch`` changes."""
    import uvicorn

    say_the_endpoint(settings.path)  # this process binds the socket and says where: the child serves
    uvicorn.run("wiremcp:asgi", host=host, port=port, log_level=settings.log_level.lower(), lifespan="on",
                log_config=None, reload=True, reload_dirs=watch, proxy_headers=False)
