"""Settings from ``WIREMCP_*`` environment variables, each with an embedded default."""

from __future__ import annotations

import difflib
import logging
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import NoReturn

from wiremcp.logs import LOG_FORMATS
from wiremcp.transports.guard import LOOPBACK_HOSTS, LOOPBACK_ORIGINS

DEFAULT_SERVER = "wiremcp.transports.serving.demo:server"


class ConfigError(ValueError):
    """A user's mistake in a setting or a server spec: one line for them to read (the command line and
    ``wiremcp:asgi`` print it and exit with status 2, without a traceback)."""

    def exit(self) -> NoReturn:
        sys.stderr.write(f"wiremcp: error: {self}\n")
        raise SystemExit(2) from None


def _str(name: str, default: str) -> str:
    raw = os.environ.get(name)
    return raw.strip() if raw is not None and raw.strip() else default


def _bound(zero: bool) -> str:
    """What a count or a duration must be: more than 0, or (``zero``: where 0 means something) 0 or more."""
    return "0 or more" if zero else "more than 0"


def _int(name: str, default: int, *, zero: bool = True) -> int:
    """A count, a size or a number of milliseconds: an integer, never negative, and more than 0 unless ``zero``."""
    raw = _str(name, "")
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0 or (value == 0 and not zero):
        raise ConfigError(f"{name} must be an integer, {_bound(zero)}, got {raw!r}")
    return value


def _seconds(name: str, default: float, *, zero: bool = True) -> float:
    """A duration in seconds: a finite number, never negative, and more than 0 unless ``zero``."""
    raw = _str(name, "")
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        raise ConfigError(f"{name} must be a number of seconds, {_bound(zero)}, got {raw!r}")
    return value


def _path(name: str, default: str) -> str:
    """A URL path: it starts with ``/`` (``mcp`` alone would match no request's path)."""
    raw = _str(name, default)
    if not raw.startswith("/") or any(c in raw for c in "?# "):
        raise ConfigError(f"{name} must be a URL path starting with /, such as {default}, got {raw!r}")
    return raw


def _bool(name: str, default: bool) -> bool:
    raw = _str(name, "").lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be true or false, got {raw!r}")


def _choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    raw = _str(name, default)
    if raw == default == "":  # unset, and unset means off
        return raw
    for choice in choices:
        if raw.lower() == choice.lower():
            return choice
    raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {raw!r}")


LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
OAUTH_PROVIDERS = ("github", "google", "microsoft", "auth0", "okta", "keycloak", "oidc", "oauth2")


def _list(name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    raw = _str(name, "")
    if not raw:
        return default
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def _words(name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    raw = _str(name, "")
    return tuple(raw.replace(",", " ").split()) if raw else default




@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting, named by its environment variable (``WIREMCP_`` + the field name in upper case)."""

    server: str = DEFAULT_SERVER
    """The server to serve: ``MODULE[:ATTR]`` or ``path/to/server.py[:ATTR]`` (``wiremcp.transports.serving.loader``)."""
    log_level: str = "INFO"
    """The level of the framework's own logs (always on stderr)."""
    log_format: str = "text"
    """``text``, or ``json``: one JSON object per line, with the session and request ids of each record."""
    max_message_bytes: int = 4 << 20
    """The largest message accepted: a stdio line or an HTTP body (413 over HTTP)."""
    stdio_drain_seconds: float = 0.3
    """How long requests in flight may finish after stdin closes."""
    path: str = "/mcp"
    """Where the Streamable HTTP endpoint is served."""
    allowed_hosts: tuple[str, ...] = LOOPBACK_HOSTS
    """``Host`` values accepted (comma-separated, ``*`` wildcards; ``*`` alone turns the check off)."""
    allowed_origins: tuple[str, ...] = LOOPBACK_ORIGINS
    """``Origin`` values accepted when the header is present (same syntax)."""
    trusted_proxies: tuple[str, ...] = ()
    """The proxies whose ``X-Forwarded-For``/``-Proto`` are believed (addresses or networks, comma-separated;
    ``*``: every peer). Unset, the client's address is the connection's own."""
    session_idle_seconds: float = 1800.0
    """A session idle this long is ended (never while a request of it is running)."""
    max_sessions: int = 10_000
    """Live sessions at most; one more initialize gets 503."""
    json_response: bool = False
    """Answer every request with application/json instead of upgrading to SSE."""
    sse_after_seconds: float = 0.5
    """A request still running after this long is answered with an SSE stream, so it can be resumed."""
    sse_keepalive_seconds: float = 15.0
    """Seconds between keep-alive comments on idle SSE streams."""
    sse_retry_ms: int = 1000
    """The reconnection delay 2025-11-25 clients are told in the priming event."""
    event_store_max_events: int = 100_000
    """The replay buffer (the events a client may resume from with ``Last-Event-ID``): events at most."""
    event_store_max_bytes: int = 64 << 20
    """The replay buffer: bytes of events at most."""
    event_store_max_age_seconds: float = 600.0
    """The replay buffer: how long an event is kept."""
    legacy_sse: bool = True
    """Serve the 2024-11-05 HTTP+SSE transport at /sse and /messages."""
    request_state_keys: tuple[str, ...] = ()
    """Keys (base64, 16/24/32 bytes, comma-separated; the first seals) for the stateless era's
    ``requestState``. Replicas behind one load balancer must share them; unset, each process makes its own."""
    request_state_ttl_seconds: float = 600.0
    """How long a ``requestState`` stays valid."""

    redis_url: str = ""
    """A Redis (or Valkey) server, e.g. ``redis://redis:6379/0``. Set, sessions, their event streams,
    server-to-client routing and the subscription bus live there, so that any replica serves any
    session; unset, everything stays in this process."""
    redis_prefix: str = "wiremcp"
    """The prefix of every Redis key and channel (several deployments can share one Redis)."""
    redis_timeout_seconds: float = 2.0
    """How long one Redis command may take before the request fails with 503."""
    redis_wait_replicas: int = 0
    """With Redis: an event of a request's stream counts as stored once this many replicas of the primary have
    it (``WAIT`` after each append); until then the replica running the request keeps it and appends it again
    after a failover. 0: once the primary has it (replication is asynchronous: a primary that dies may take
    its newest events with it)."""
    redis_wait_timeout_ms: int = 100
    """How long one ``WAIT`` waits for the replicas (less than ``redis_timeout_seconds``)."""
    session_cache_seconds: float = 1.0
    """With Redis: how long a replica may use its copy of a session without asking Redis again (0: it
    asks on every request; at most a quarter of ``session_idle_seconds``). Changes and deletions made on
    other replicas drop the copy as soon as their pub/sub announcement arrives; a request racing one, or
    one whose announcement was lost, is served from a copy at most this old. An idle session ends between
    ``session_idle_seconds`` and that plus this after its last request."""
    replica_id: str = ""
    """This process's name among the replicas (logs, routing); unset, a random one."""
    replica_lease_seconds: float = 5.0
    """A replica that has not renewed its lease for this long is taken for dead: the requests it was
    running are answered with an error on their streams when a client resumes them elsewhere."""
    drain_seconds: float = 10.0
    """On shutdown (SIGTERM), how long requests in flight may finish before their streams are closed."""
    drain_settle_seconds: float = 0.0
    """After SIGTERM, how long the replica goes on serving, unready and closing each connection after its
    answer, before it stops accepting connections and drains: the time a balancer that reads ``/readyz``
    needs to stop sending it new ones (Kubernetes: a few seconds; a ``preStop`` sleep does the same)."""
    task_ttl_seconds: float = 3600.0
    """How long a task is kept from its creation (a 2025-11-25 client may ask for less, or up to a day)."""
    task_poll_interval_ms: int = 1000
    """The polling interval suggested to clients in every task."""
    max_tasks_per_owner: int = 100
    """How many tasks one principal (or session) may have running at once in one process; more are refused."""
    metrics: bool = True
    """Serve Prometheus metrics at ``/metrics``."""
    error_details: bool = False
    """Development only: show clients the type and text of unexpected exceptions (``MCPServer(error_details=True)``
    does the same); off, they get a generic message and a reference to the traceback in the log."""

    auth_resource: str = ""
    """The canonical URL of the MCP endpoint (e.g. ``https://mcp.example.com/mcp``). Setting it turns
    bearer-token authentication on: tokens must name it as their audience, and the protected resource
    metadata advertises it."""
    auth_issuer: str = ""
    """The authorization server (its issuer URL) whose tokens are accepted."""
    auth_jwks_url: str = ""
    """Verify JWT access tokens with the authorization server's keys from this URL."""
    auth_introspection_url: str = ""
    """Or verify tokens with RFC 7662 introspection at this URL (with the client id and secret below)."""
    auth_client_id: str = ""
    """The client id introspection requests are authenticated with."""
    auth_client_secret: str = ""
    """The client secret introspection requests are authenticated with."""
    auth_service_tokens: bool = False
    """With introspection: accept an active token that names no user (a service's own, of the client credentials
    grant, as a gateway sends) as its client's. Off by default: a token without a subject is refused."""
    auth_static_tokens: tuple[str, ...] = ()
    """Development only: fixed tokens, ``token=subject[:scope scope]``, comma-separated."""
    auth_scopes: tuple[str, ...] = ()
    """Scopes every request needs (space- or comma-separated)."""
    auth_scopes_supported: tuple[str, ...] = ()
    """Scopes advertised in the protected resource metadata."""
    auth_algorithms: tuple[str, ...] = ("RS256", "ES256", "PS256", "EdDSA")
    """The JWT signature algorithms accepted (asymmetric ones only; space- or comma-separated)."""

    oauth_provider: str = ""
    """Turns the built-in OAuth server on: MCP clients sign users in through it, at this identity provider:
    ``github``, ``google``, ``microsoft``, ``auth0``, ``okta``, ``keycloak``, ``oidc`` (any OpenID Connect provider,
    with ``WIREMCP_OAUTH_DISCOVERY_URL``) or ``oauth2`` (a plain OAuth 2 provider, with its endpoints). Needs
    ``WIREMCP_AUTH_RESOURCE``, the client id and secret this server has at the provider, and, with replicas,
    ``WIREMCP_OAUTH_SECRET`` and Redis."""
    oauth_client_id: str = ""
    """This server's client id at the identity provider (registered there with one redirect URI: the
    issuer's ``/oauth/callback``)."""
    oauth_client_secret: str = ""
    """This server's client secret at the identity provider."""
    oauth_tenant: str = ""
    """What the provider's preset needs to find it: Microsoft Entra ID's tenant (its id or domain), the Auth0 or
    Okta domain (``acme.eu.auth0.com``), the Keycloak realm's URL (``https://sso.example.com/realms/staff``)."""
    oauth_discovery_url: str = ""
    """``oidc``: the provider's discovery document (``.../.well-known/openid-configuration``)."""
    oauth_authorize_url: str = ""
    """``oauth2``: the provider's authorization endpoint."""
    oauth_token_url: str = ""
    """``oauth2``: the provider's token endpoint."""
    oauth_userinfo_url: str = ""
    """``oauth2``: where the signed-in user is read, with their access token (GitHub's shape: ``/user``)."""
    oauth_subject_claim: str = ""
    """The claim that names a user for good (default: ``sub``; GitHub: ``id``)."""
    oauth_upstream_scopes: tuple[str, ...] = ()
    """The scopes asked of the provider (default: ``openid email profile``; GitHub: ``read:user user:email``).
    Add the provider's API scopes a tool needs to call it as the user."""
    oauth_issuer: str = ""
    """This OAuth server's issuer URL (default: the origin of ``WIREMCP_AUTH_RESOURCE``): where clients find its
    metadata; its endpoints are under ``/oauth/``."""
    oauth_secret: str = ""
    """The secret (base64url, 32 bytes) the OAuth server seals its keys and users' provider tokens with, and
    signs consent forms with. Every replica needs the same; unset, each process makes its own, and its sign-ins
    and tokens end with it."""
    oauth_client_metadata: bool = True
    """Accept clients that name themselves by the URL of their metadata document (Client ID Metadata Documents):
    fetched over https from public addresses only, and kept in the shared state (memory or Redis, so replicas
    fetch a document once between them) for as long as its ``Cache-Control`` allows (5 minutes without one, an
    hour at most; at most 10,000 new documents an hour)."""
    oauth_dynamic_registration: bool = True
    """Accept clients that register themselves (Dynamic Client Registration, RFC 7591; 20 an hour per address)."""
    oauth_allowed_email_domains: tuple[str, ...] = ()
    """Only users whose (verified, where the provider says) email address is in one of these domains may sign
    in (comma-separated); unset, anyone the provider signs in."""
    oauth_group_scopes: tuple[str, ...] = ()
    """Which scopes a user's groups (the provider's ``groups`` claim) grant: ``group=scope scope``, comma-separated
    (``engineers=notes:read notes:write,admins=admin``). Set, a user gets only the scopes of their groups; unset,
    every scope the server supports."""
    oauth_access_token_seconds: float = 300.0
    """How long the OAuth server's access tokens last (clients refresh them with their refresh token)."""

    @classmethod
    def from_env(cls) -> Settings:
        d = cls()
        return cls(
            server=_str("WIREMCP_SERVER", d.server),
            log_level=_choice("WIREMCP_LOG_LEVEL", d.log_level, LOG_LEVELS),
            log_format=_choice("WIREMCP_LOG_FORMAT", d.log_format, LOG_FORMATS),
            max_message_bytes=_int("WIREMCP_MAX_MESSAGE_BYTES", d.max_message_bytes, zero=False),
            stdio_drain_seconds=_seconds("WIREMCP_STDIO_DRAIN_SECONDS", d.stdio_drain_seconds),
            path=_path("WIREMCP_PATH", d.path),
            allowed_hosts=_list("WIREMCP_ALLOWED_HOSTS", d.allowed_hosts),
            allowed_origins=_list("WIREMCP_ALLOWED_ORIGINS", d.allowed_origins),
            trusted_proxies=_list("WIREMCP_TRUSTED_PROXIES", d.trusted_proxies),
            session_idle_seconds=_seconds("WIREMCP_SESSION_IDLE_SECONDS", d.session_idle_seconds, zero=False),
            max_sessions=_int("WIREMCP_MAX_SESSIONS", d.max_sessions, zero=False),
            json_response=_bool("WIREMCP_JSON_RESPONSE", d.json_response),
            sse_after_seconds=_seconds("WIREMCP_SSE_AFTER_SECONDS", d.sse_after_seconds),
            sse_keepalive_seconds=_seconds("WIREMCP_SSE_KEEPALIVE_SECONDS", d.sse_keepalive_seconds, zero=False),
            sse_retry_ms=_int("WIREMCP_SSE_RETRY_MS", d.sse_retry_ms),
            event_store_max_events=_int("WIREMCP_EVENT_STORE_MAX_EVENTS", d.event_store_max_events),
            event_store_max_bytes=_int("WIREMCP_EVENT_STORE_MAX_BYTES", d.event_store_max_bytes),
            event_store_max_age_seconds=_seconds("WIREMCP_EVENT_STORE_MAX_AGE_SECONDS", d.event_store_max_age_seconds),
            legacy_sse=_bool("WIREMCP_LEGACY_SSE", d.legacy_sse),
            request_state_keys=_list("WIREMCP_REQUEST_STATE_KEYS", d.request_state_keys),
            request_state_ttl_seconds=_seconds("WIREMCP_REQUEST_STATE_TTL_SECONDS", d.request_state_ttl_seconds, zero=False),
            redis_url=_str("WIREMCP_REDIS_URL", d.redis_url),
            redis_prefix=_str("WIREMCP_REDIS_PREFIX", d.redis_prefix),
            redis_timeout_seconds=_seconds("WIREMCP_REDIS_TIMEOUT_SECONDS", d.redis_timeout_seconds, zero=False),
            redis_wait_replicas=_int("WIREMCP_REDIS_WAIT_REPLICAS", d.redis_wait_replicas),
            redis_wait_timeout_ms=_int("WIREMCP_REDIS_WAIT_TIMEOUT_MS", d.redis_wait_timeout_ms, zero=False),
            session_cache_seconds=_seconds("WIREMCP_SESSION_CACHE_SECONDS", d.session_cache_seconds),
            replica_id=_str("WIREMCP_REPLICA_ID", d.replica_id),
            replica_lease_seconds=_seconds("WIREMCP_REPLICA_LEASE_SECONDS", d.replica_lease_seconds, zero=False),
            drain_seconds=_seconds("WIREMCP_DRAIN_SECONDS", d.drain_seconds),
            drain_settle_seconds=_seconds("WIREMCP_DRAIN_SETTLE_SECONDS", d.drain_settle_seconds),
            task_ttl_seconds=_seconds("WIREMCP_TASK_TTL_SECONDS", d.task_ttl_seconds, zero=False),
            task_poll_interval_ms=_int("WIREMCP_TASK_POLL_INTERVAL_MS", d.task_poll_interval_ms, zero=False),
            max_tasks_per_owner=_int("WIREMCP_MAX_TASKS_PER_OWNER", d.max_tasks_per_owner, zero=False),
            metrics=_bool("WIREMCP_METRICS", d.metrics),
            error_details=_bool("WIREMCP_ERROR_DETAILS", d.error_details),
            auth_resource=_str("WIREMCP_AUTH_RESOURCE", d.auth_resource),
            auth_issuer=_str("WIREMCP_AUTH_ISSUER", d.auth_issuer),
            auth_jwks_url=_str("WIREMCP_AUTH_JWKS_URL", d.auth_jwks_url),
            auth_introspection_url=_str("WIREMCP_AUTH_INTROSPECTION_URL", d.auth_introspection_url),
            auth_client_id=_str("WIREMCP_AUTH_CLIENT_ID", d.auth_client_id),
            auth_client_secret=_str("WIREMCP_AUTH_CLIENT_SECRET", d.auth_client_secret),
            auth_service_tokens=_bool("WIREMCP_AUTH_SERVICE_TOKENS", d.auth_service_tokens),
            auth_static_tokens=_list("WIREMCP_AUTH_STATIC_TOKENS", d.auth_static_tokens),
            auth_scopes=_words("WIREMCP_AUTH_SCOPES", d.auth_scopes),
            auth_scopes_supported=_words("WIREMCP_AUTH_SCOPES_SUPPORTED", d.auth_scopes_supported),
            auth_algorithms=_words("WIREMCP_AUTH_ALGORITHMS", d.auth_algorithms),
            oauth_provider=_choice("WIREMCP_OAUTH_PROVIDER", d.oauth_provider, OAUTH_PROVIDERS),
            oauth_client_id=_str("WIREMCP_OAUTH_CLIENT_ID", d.oauth_client_id),
            oauth_client_secret=_str("WIREMCP_OAUTH_CLIENT_SECRET", d.oauth_client_secret),
            oauth_tenant=_str("WIREMCP_OAUTH_TENANT", d.oauth_tenant),
            oauth_discovery_url=_str("WIREMCP_OAUTH_DISCOVERY_URL", d.oauth_discovery_url),
            oauth_authorize_url=_str("WIREMCP_OAUTH_AUTHORIZE_URL", d.oauth_authorize_url),
            oauth_token_url=_str("WIREMCP_OAUTH_TOKEN_URL", d.oauth_token_url),
            oauth_userinfo_url=_str("WIREMCP_OAUTH_USERINFO_URL", d.oauth_userinfo_url),
            oauth_subject_claim=_str("WIREMCP_OAUTH_SUBJECT_CLAIM", d.oauth_subject_claim),
            oauth_upstream_scopes=_words("WIREMCP_OAUTH_UPSTREAM_SCOPES", d.oauth_upstream_scopes),
            oauth_issuer=_str("WIREMCP_OAUTH_ISSUER", d.oauth_issuer),
            oauth_secret=_str("WIREMCP_OAUTH_SECRET", d.oauth_secret),
            oauth_client_metadata=_bool("WIREMCP_OAUTH_CLIENT_METADATA", d.oauth_client_metadata),
            oauth_dynamic_registration=_bool("WIREMCP_OAUTH_DYNAMIC_REGISTRATION", d.oauth_dynamic_registration),
            oauth_allowed_email_domains=_list("WIREMCP_OAUTH_ALLOWED_EMAIL_DOMAINS", d.oauth_allowed_email_domains),
            oauth_group_scopes=_list("WIREMCP_OAUTH_GROUP_SCOPES", d.oauth_group_scopes),
            oauth_access_token_seconds=_seconds("WIREMCP_OAUTH_ACCESS_TOKEN_SECONDS", d.oauth_access_token_seconds,
                                                zero=False),
        )


PREFIX = "WIREMCP_"
SETTING_NAMES: frozenset[str] = frozenset(PREFIX + field.name.upper() for field in fields(Settings))
"""Every setting's variable, from ``Settings``' fields: the one list of them (``from_env`` reads each)."""
READ_ELSEWHERE: frozenset[str] = frozenset({"WIREMCP_BIND", "WIREMCP_PORT", "WIREMCP_NODE_CACHE"})
"""``WIREMCP_*`` variables that are not settings but are read by something else, and so no mistake: the
address and port the deploy/ compose files publish, and where the conformance tests keep Node.js."""

log = logging.getLogger("wiremcp")


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """One line for each ``WIREMCP_*`` variable of ``environ`` that names no setting (a misspelt one, most
    likely: it is ignored, and its value with it), with the setting it probably meant."""
    lines = []
    for name in sorted(environ):
        if not name.startswith(PREFIX) or name in SETTING_NAMES or name in READ_ELSEWHERE:
            continue
        # Compared without the prefix that all of them share, which would make any two look alike.
        close = difflib.get_close_matches(name.removeprefix(PREFIX), [n.removeprefix(PREFIX) for n in sorted(SETTING_NAMES)], n=1)
        hint = f": did you mean {PREFIX}{close[0]}?" if close else " (the settings are listed in the Settings reference of the documentation)"
        lines.append(f"{name} is not a wiremcp setting and is ignored{hint}")
    return lines


def warn_unknown_variables(environ: Mapping[str, str] = os.environ) -> None:
    """Log a warning for each ``WIREMCP_*`` variable that names no setting (``unknown_variables``); serving
    goes on. Called once logging is set up, by whatever serves."""
    for line in unknown_variables(environ):
        log.warning("%s", line)
