"""``wiremcp.transports.serving.deployment``: the composition root. What the settings make of a server
(shared ``requestState`` keys, task limits), of authentication (``WIREMCP_AUTH_*``: which verifier, or a
refusal at startup) and of the HTTP app (its path, metrics, the probes in front); and a bad setting met
while serving, which ends the process with one line on stderr and exit status 2."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests.support.http import CLIENT_INFO, asgi_request, post_headers, request_body, serve_in_process
from tests.support.tasks import Gate, task_server
from tests.support.tokens import challenge_params
from wiremcp import MCPServer, Runtime, TaskSettings
from wiremcp.auth.metadata import WELL_KNOWN
from wiremcp.request_state import RequestStateSealer
from wiremcp.transports.asgi import Receive, Scope, SendASGI
from wiremcp.transports.observability.metrics import Metrics
from wiremcp.transports.serving.deployment import (
    build_auth,
    build_http_app,
    build_metrics,
    build_redis,
    build_runtime,
    default_asgi,
    run,
)
from wiremcp.transports.serving.settings import ConfigError, Settings

RESOURCE = "https://mcp.example.test/mcp"
ISSUER = "https://as.example.test"
KEY = "AAECAwQFBgcICQoLDA0ODw"
"""A 16-byte ``requestState`` key, base64."""


@pytest.fixture
def no_wiremcp_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """An environment without any ``WIREMCP_*`` variable (for what reads ``Settings.from_env``)."""
    for name in [n for n in os.environ if n.startswith("WIREMCP_")]:
        monkeypatch.delenv(name)


# -- the server ----------------------------------------------------------------------------------------------


def test_the_runtime_seals_with_the_shared_request_state_keys() -> None:
    server = MCPServer("keys")
    runtime = build_runtime(server, Settings(request_state_keys=(KEY,), request_state_ttl_seconds=42.0))
    assert server.runtime is runtime
    assert isinstance(runtime.request_states, RequestStateSealer)
    assert runtime.request_states.ttl == 42.0
    sealed = runtime.request_states.seal(owner="", method="m", params={}, answers={}, app_state=None)
    assert RequestStateSealer.from_strings([KEY]).open(sealed, owner="", method="m", params={}).answers == {}


@pytest.mark.parametrize("key", ["not base64!", "AAEC"])
def test_a_bad_request_state_key_is_a_config_error(key: str) -> None:
    with pytest.raises(ConfigError, match="WIREMCP_REQUEST_STATE_KEYS"):
        build_runtime(MCPServer("keys"), Settings(request_state_keys=(key,)))


def test_a_server_without_task_tools_gets_no_task_runner() -> None:
    server = MCPServer("plain")

    @server.tool()
    def echo(text: str) -> str:
        return text

    assert build_runtime(server, Settings(max_tasks_per_owner=3)) is server.runtime
    assert not server.runtime.has_task_runner


@pytest.mark.spec("2025-11-25/basic/utilities/tasks")
def test_the_task_settings_reach_the_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    from wiremcp.transports.serving.deployment import build_runtime
    from wiremcp.transports.serving.settings import Settings

    monkeypatch.setenv("WIREMCP_TASK_TTL_SECONDS", "120")
    monkeypatch.setenv("WIREMCP_TASK_POLL_INTERVAL_MS", "250")
    monkeypatch.setenv("WIREMCP_MAX_TASKS_PER_OWNER", "3")
    runner = build_runtime(task_server(Gate()), Settings.from_env()).task_runner
    assert (runner.default_ttl_ms, runner.poll_interval_ms, runner.max_running_per_owner) == (120_000, 250, 3)


# -- authentication ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("options", "complaint"), [
    ({"auth_jwks_url": ISSUER + "/jwks"}, "WIREMCP_AUTH_RESOURCE"),
    ({"auth_static_tokens": ("t=a",), "auth_jwks_url": ISSUER + "/jwks"}, "WIREMCP_AUTH_RESOURCE"),
    ({"auth_static_tokens": ("t=a",), "auth_introspection_url": ISSUER + "/introspect"}, "WIREMCP_AUTH_RESOURCE"),
    ({"auth_resource": RESOURCE, "auth_jwks_url": ISSUER + "/jwks"}, "WIREMCP_AUTH_ISSUER"),
    ({"auth_resource": RESOURCE, "auth_issuer": ISSUER}, "WIREMCP_AUTH_JWKS_URL"),
    ({"auth_resource": RESOURCE, "auth_issuer": ISSUER, "auth_introspection_url": ISSUER + "/introspect"},
     "WIREMCP_AUTH_CLIENT_ID"),
    ({"auth_resource": "mcp.example.test/mcp", "auth_issuer": ISSUER, "auth_static_tokens": ("t=a",)},
     "absolute"),
    ({"auth_resource": RESOURCE, "auth_issuer": ISSUER, "auth_jwks_url": ISSUER + "/jwks",
      "auth_algorithms": ("HS256",)}, "WIREMCP_AUTH_ALGORITHMS: .*asymmetric"),
    ({"auth_resource": RESOURCE, "auth_issuer": ISSUER, "auth_static_tokens": ("bad token=x",)},
     "WIREMCP_AUTH_STATIC_TOKENS"),
])
def test_incomplete_auth_settings_are_refused_at_startup(options: dict[str, Any], complaint: str) -> None:
    """A ``ConfigError``: one line and exit status 2, never a traceback."""
    with pytest.raises(ConfigError, match=complaint):
        build_auth(Settings(**options))


@pytest.mark.parametrize(("service_tokens", "status"), [(True, 400), (False, 401)])
async def test_service_tokens_are_the_clients_only_when_the_setting_says_so(service_tokens: bool, status: int) -> None:
    """``WIREMCP_AUTH_SERVICE_TOKENS``: an active token that names no user (a gateway's own, of the client
    credentials grant) is served as its client's, against a real introspection endpoint; without it, refused."""

    async def introspect(scope: Scope, receive: Receive, send: SendASGI) -> None:
        body = json.dumps({"active": True, "client_id": "the-gateway", "scope": "", "aud": "http://127.0.0.1/mcp",
                           "iss": ISSUER}).encode()
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body})

    async with serve_in_process(introspect) as base:
        settings = Settings(auth_resource="http://127.0.0.1/mcp", auth_issuer=ISSUER, auth_introspection_url=base,
                            auth_client_id="the-mcp-server", auth_client_secret="secret",
                            auth_service_tokens=service_tokens)
        app = build_http_app(MCPServer("configured"), settings)
        answer = await asgi_request(app, "POST", json.dumps(request_body(1, "ping")).encode(),
                                    post_headers(authorization="Bearer the-gateways-token"))
    assert answer.status == status


def test_without_auth_settings_there_is_no_authentication() -> None:
    assert build_auth(Settings()) is None


async def test_static_tokens_from_the_settings_guard_the_http_app() -> None:
    server = MCPServer("configured")
    settings = Settings(auth_resource="http://127.0.0.1/mcp", auth_issuer=ISSUER, auth_scopes=("mcp:tools",),
                        auth_static_tokens=("t1=alice:mcp:tools mcp:read", "t2=bob:mcp:read"))
    app = build_http_app(server, settings)
    refused = await asgi_request(app, "POST", b"{}")
    assert refused.status == 401
    assert challenge_params(refused.headers["www-authenticate"]) == {
        "scope": "mcp:tools", "resource_metadata": "http://127.0.0.1/.well-known/oauth-protected-resource/mcp"}
    lacking = await asgi_request(app, "POST", b"{}", {"authorization": "Bearer t2"})
    assert lacking.status == 403
    ok = await asgi_request(app, "POST", b"{}", {"authorization": "Bearer t1", "accept": "application/json, text/event-stream",
                                                 "content-type": "application/json"})
    assert ok.status == 400  # through authentication: the empty object is the MCP endpoint's to refuse
    metadata = await asgi_request(app, "GET", path=WELL_KNOWN + "/mcp")
    assert metadata.json()["scopes_supported"] == ["mcp:tools"]


# -- the HTTP app ------------------------------------------------------------------------------------------------


async def test_the_http_app_serves_the_endpoint_at_the_configured_path_behind_the_probes() -> None:
    app = build_http_app(MCPServer("configured"), Settings(path="/rpc", legacy_sse=False))
    initialize = json.dumps(request_body(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                           "clientInfo": CLIENT_INFO})).encode()
    answered = await asgi_request(app, "POST", initialize, post_headers(), path="/rpc")
    assert answered.status == 200, answered.body
    assert (await asgi_request(app, "POST", initialize, post_headers(), path="/mcp")).status == 404
    assert (await asgi_request(app, "GET", path="/healthz")).status == 200
    assert (await asgi_request(app, "GET", path="/metrics")).status == 200


def test_metrics_unless_switched_off_and_redis_only_when_configured() -> None:
    assert isinstance(build_metrics(Settings()), Metrics)
    assert build_metrics(Settings(metrics=False)) is None
    assert build_redis(Settings()) is None


def test_a_bad_redis_url_is_a_setting_error_that_names_the_variable() -> None:
    with pytest.raises(ConfigError, match="WIREMCP_REDIS_URL: unknown scheme 'redis\\+clusters'"):
        build_redis(Settings(redis_url="redis+clusters://a:1"))
    with pytest.raises(ConfigError, match="names the service"):
        build_redis(Settings(redis_url="redis+sentinel://s1:26379,s2:26379"))


@pytest.mark.parametrize(("options", "complaint"), [
    ({"redis_wait_replicas": -1}, "WIREMCP_REDIS_WAIT_REPLICAS must be 0 or more, got -1"),
    ({"redis_wait_replicas": 1, "redis_wait_timeout_ms": 0}, "WIREMCP_REDIS_WAIT_TIMEOUT_MS must be more than 0"),
    ({"redis_wait_replicas": 1, "redis_wait_timeout_ms": 2000},
     r"WIREMCP_REDIS_WAIT_TIMEOUT_MS must be more than 0 and less than WIREMCP_REDIS_TIMEOUT_SECONDS \(2000 ms\), "
     "got 2000"),
], ids=["negative", "no-wait", "no-shorter-than-a-command"])
def test_a_wait_the_redis_timeout_would_cut_short_is_refused(options: dict[str, Any], complaint: str) -> None:
    """``WAIT`` with 0 ms would wait for ever, and one as long as a command may take would fail every append."""
    with pytest.raises(ConfigError, match=complaint):
        build_redis(Settings(redis_url="redis://127.0.0.1:1/0", **options))
    assert build_redis(Settings(redis_url="redis://127.0.0.1:1/0", redis_wait_timeout_ms=0)) is not None  # WAIT off


# -- a bad setting while serving: one line, exit status 2 ---------------------------------------------------------


@pytest.mark.usefixtures("no_wiremcp_variables")
@pytest.mark.parametrize(("env", "line"), [
    ({"WIREMCP_MAX_SESSIONS": "many"}, "WIREMCP_MAX_SESSIONS must be an integer, more than 0, got 'many'"),
    ({"WIREMCP_REDIS_URL": "redis+cluster://user:s3cret@a:1/0"},
     "WIREMCP_REDIS_URL: a cluster has no databases: nothing may follow the nodes in 'redis+cluster://***@a:1/0'"),
    ({"WIREMCP_AUTH_RESOURCE": RESOURCE, "WIREMCP_AUTH_ISSUER": ISSUER, "WIREMCP_AUTH_JWKS_URL": ISSUER + "/jwks",
      "WIREMCP_AUTH_ALGORITHMS": "HS256"},
     "WIREMCP_AUTH_ALGORITHMS: refusing algorithms ['HS256']: only asymmetric signatures are accepted"),
    ({"WIREMCP_TRUSTED_PROXIES": "10.0.0.1, nginx"},
     "WIREMCP_TRUSTED_PROXIES: 'nginx' is not an IP address, a network such as 10.0.0.0/8, or *"),
], ids=["not-an-integer", "a-bad-redis-url", "a-symmetric-algorithm", "a-proxy-by-name"])
def test_a_bad_setting_ends_the_default_deployment_with_one_line(
        env: dict[str, str], line: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit) as exited:
        default_asgi()
    assert exited.value.code == 2
    assert capsys.readouterr().err == f"wiremcp: error: {line}\n"


@pytest.mark.usefixtures("no_wiremcp_variables")
def test_an_unknown_transport_ends_server_run_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        run(MCPServer("x"), "websocket", host="127.0.0.1", port=8000)
    assert exited.value.code == 2
    assert capsys.readouterr().err == ("wiremcp: error: transport must be 'stdio' or 'http' ('streamable-http'), "
                                       "not 'websocket'\n")


@pytest.mark.usefixtures("no_wiremcp_variables")
def test_the_sse_transport_of_other_frameworks_is_refused_with_where_it_is_served(
        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        run(MCPServer("x"), "sse", host="127.0.0.1", port=8000)
    assert exited.value.code == 2
    assert capsys.readouterr().err == ("wiremcp: error: transport must be 'stdio' or 'http' ('streamable-http'), "
                                       "not 'sse': 'http' serves the HTTP+SSE transport at /sse too\n")


@pytest.mark.usefixtures("no_wiremcp_variables")
def test_a_tool_whose_view_is_not_served_ends_server_run_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    server = MCPServer("x")

    @server.tool(ui="ui://x/missing.html")
    def show() -> str:
        return "x"

    with pytest.raises(SystemExit) as exited:
        run(server, "http", host="127.0.0.1", port=8000)
    assert exited.value.code == 2
    assert capsys.readouterr().err == ("wiremcp: error: tool show: its view ui://x/missing.html is not a resource "
                                       "of this server (register it with server.app)\n")


def test_a_runtime_the_servers_code_made_is_kept_and_refused_only_with_redis() -> None:
    server = MCPServer("own")
    own = Runtime(server, tasks=TaskSettings(max_running_per_owner=5))
    assert build_runtime(server, Settings(max_tasks_per_owner=3)) is own
    with pytest.raises(ConfigError, match="makes its own Runtime"):
        build_runtime(server, Settings(redis_url="redis://127.0.0.1:1/0"), redis=object())  # type: ignore[arg-type]
