"""Every method that names a tool, prompt, resource, template or task passes one gate (``app/access.py``).

A real ``uvicorn app:asgi`` serves ``tests/support/access_server.py`` with bearer auth (static tokens for one
subject): ``wide`` holds the scope ``secret:use``, ``narrow`` does not. Each method is sent in each era, by
raw HTTP, against the scoped component of each kind: with ``narrow`` it is 403 ``insufficient_scope`` (JSON-RPC
-32600 with ``data.requiredScopes``), with ``wide`` the same request is answered. What names components
without being refused (lists, ``subscriptions/listen``, ``tasks/list``) leaves out what the caller may not use,
and no update of a resource the caller may not read ever reaches it. A check against the dispatcher's method
tables keeps the enumeration complete: a new method that names something must be added here.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.support.http import (
    ACCEPT_BOTH,
    RawSession,
    SSEReader,
    UvicornProcess,
    initialize,
    run_uvicorn,
)
from tests.support.tokens import challenge_params
from wiremcp import MCPServer
from wiremcp.errors import INVALID_REQUEST, RESOURCE_NOT_FOUND
from wiremcp.mirrored_headers import NAMED
from wiremcp.protocol import (
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_SUBSCRIPTION,
    META_VERSION,
    TASKS_EXTENSION,
)

SCOPE = "secret:use"
WIDE = "wide-token-4f1c9a"
NARROW = "narrow-token-8b2d7e"
STATELESS = "2026-07-28"
HANDSHAKE = "2025-11-25"
ENV = {"WIREMCP_AUTH_RESOURCE": "http://127.0.0.1/mcp", "WIREMCP_AUTH_ISSUER": "https://issuer.test",
       "WIREMCP_AUTH_STATIC_TOKENS": f"{WIDE}=alice:{SCOPE},{NARROW}=alice"}
SUBSCRIPTIONS = "2026-07-28/basic/patterns/subscriptions#acknowledgment"

pytestmark = pytest.mark.spec("2025-11-25/basic/authorization#runtime-insufficient-scope-errors")


@pytest.fixture(scope="module")
def served() -> Iterator[UvicornProcess]:
    with run_uvicorn("tests.support.access_server:server", ENV) as process:
        yield process
        assert "Traceback" not in process.output(), process.output()


def _auth(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


# -- the requests ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    method: str
    params: dict[str, Any]
    id: str

    def __str__(self) -> str:
        return self.id


PROMPT_REF = {"type": "ref/prompt", "name": "secret_prompt"}
TEMPLATE_REF = {"type": "ref/resource", "uri": "secret://docs/{id}"}
TASK = "<task>"
"""Stands for the id of a task ``secret_tool`` ran for alice (made with the wide token)."""

COMMON = [
    Case("tools/call", {"name": "secret_tool", "arguments": {}}, "tools/call"),
    Case("prompts/get", {"name": "secret_prompt", "arguments": {"topic": "t"}}, "prompts/get"),
    Case("resources/read", {"uri": "secret://doc"}, "resources/read-static"),
    Case("resources/read", {"uri": "secret://docs/7"}, "resources/read-template"),
    Case("completion/complete", {"ref": PROMPT_REF, "argument": {"name": "topic", "value": "a"}},
         "completion/complete-prompt"),
    Case("completion/complete", {"ref": TEMPLATE_REF, "argument": {"name": "id", "value": "a"}},
         "completion/complete-template"),
    Case("skills/get", {"uri": "skill://secret/vault/SKILL.md"}, "skills/get"),
    Case("resources/directory/read", {"uri": "skill://secret/vault/docs"}, "resources/directory/read"),
    Case("resources/read", {"uri": "skill://secret/vault/docs/combination.md"}, "resources/read-skill-file"),
]
HANDSHAKE_CASES = [
    *COMMON,
    Case("resources/subscribe", {"uri": "secret://doc"}, "resources/subscribe-static"),
    Case("resources/subscribe", {"uri": "secret://docs/7"}, "resources/subscribe-template"),
    Case("tasks/get", {"taskId": TASK}, "tasks/get"),
    Case("tasks/result", {"taskId": TASK}, "tasks/result"),
    Case("tasks/cancel", {"taskId": TASK}, "tasks/cancel"),
]
STATELESS_CASES = [
    *COMMON,
    Case("tasks/get", {"taskId": TASK}, "tasks/get"),
    Case("tasks/update", {"taskId": TASK, "inputResponses": {}}, "tasks/update"),
    Case("tasks/cancel", {"taskId": TASK}, "tasks/cancel"),
]
FILTERED = {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "subscriptions/listen",
            "tasks/list", "skills/list"}
"""Methods that name components without being refused: they leave out what the caller may not use."""
NAME_NOTHING = {"initialize", "ping", "server/discover", "logging/setLevel", "resources/unsubscribe"}
"""Methods that reach no component (unsubscribing only forgets)."""


def test_the_enumeration_covers_every_method_of_both_eras() -> None:
    handshake, stateless = MCPServer("any").runtime.dispatcher.methods()
    assert {c.method for c in HANDSHAKE_CASES} | FILTERED | NAME_NOTHING >= handshake
    assert {c.method for c in STATELESS_CASES} | FILTERED | NAME_NOTHING >= stateless
    # and nothing enumerated here is a method the era does not have
    assert {c.method for c in HANDSHAKE_CASES} <= handshake
    assert {c.method for c in STATELESS_CASES} <= stateless


def _meta(tasks: bool = False) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}} if tasks else {}
    return {META_VERSION: STATELESS, META_CAPABILITIES: capabilities,
            META_CLIENT_INFO: {"name": "access-tests", "version": "0"}}


async def stateless_post(http: httpx.AsyncClient, url: str, method: str, params: dict[str, Any], token: str,
                         *, tasks: bool = False, rid: int = 1) -> httpx.Response:
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": _meta(tasks)}}
    headers = {"accept": ACCEPT_BOTH, "content-type": "application/json", "mcp-protocol-version": STATELESS,
               "mcp-method": method, **_auth(token)}
    named = NAMED.get(method)
    if named is not None:
        headers["mcp-name"] = str(params[named])
    return await http.post(url, content=json.dumps(body), headers=headers)


def _substitute(params: dict[str, Any], task_id: str) -> dict[str, Any]:
    return {key: task_id if value == TASK else value for key, value in params.items()}


def assert_refused(response: httpx.Response) -> None:
    assert response.status_code == 403, response.text
    error = response.json()["error"]
    assert error["code"] == INVALID_REQUEST, error
    assert error["data"]["requiredScopes"] == [SCOPE]
    challenge = challenge_params(response.headers["www-authenticate"])
    assert challenge["error"] == "insufficient_scope"
    assert challenge["scope"] == SCOPE


def assert_past_the_gate(response: httpx.Response) -> None:
    """Answered, or refused for a reason other than scopes (cancelling a task that has already ended)."""
    assert response.status_code == 200, response.text
    error = response.json().get("error")
    assert error is None or "requiredScopes" not in (error.get("data") or {}), error


def assert_answered(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    body = response.json()
    assert "error" not in body, body
    return body["result"]


# -- the handshake era -----------------------------------------------------------------------------------
async def _session(http: httpx.AsyncClient, served: UvicornProcess, token: str) -> RawSession:
    http.headers.update(_auth(token))
    return await initialize(http, served.url, HANDSHAKE)


async def _handshake_task(session: RawSession, tool: str = "secret_tool") -> str:
    """A task ``tool`` runs for alice (the session's token must allow the tool)."""
    created = await session.call("tools/call", {"name": tool, "arguments": {}, "task": {"ttl": 60_000}})
    task_id: str = created["task"]["taskId"]
    return task_id


@pytest.mark.parametrize("case", HANDSHAKE_CASES, ids=str)
async def test_handshake_era_refuses_a_narrow_token_and_answers_a_wide_one(
        case: Case, served: UvicornProcess, http: httpx.AsyncClient) -> None:
    session = await _session(http, served, WIDE)
    params = _substitute(case.params, await _handshake_task(session)) if TASK in case.params.values() \
        else case.params
    # The same session (it belongs to alice, whichever of her tokens comes), first with the narrow token.
    assert_refused(await session.request(case.method, params, **_auth(NARROW)))
    assert_past_the_gate(await session.request(case.method, params, **_auth(WIDE)))


@pytest.mark.spec("2025-11-25/server/resources#subscriptions")
async def test_no_update_of_a_resource_the_caller_may_not_read_reaches_its_session(
        served: UvicornProcess, http: httpx.AsyncClient) -> None:
    narrow = await _session(http, served, NARROW)
    async with narrow.stream_get() as response:
        stream = SSEReader(response)
        assert_refused(await narrow.request("resources/subscribe", {"uri": "secret://doc"}))
        await narrow.call("resources/subscribe", {"uri": "public://doc"})
        await narrow.tool("touch", uri="secret://doc")
        await narrow.tool("touch", uri="public://doc")
        update = await stream.message()
    # The secret update was announced first: had it been delivered, it would have come first.
    assert update == {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "public://doc"}}


@pytest.mark.spec("2025-11-25/server/resources#error-handling")
async def test_subscribing_to_a_uri_that_names_no_resource_is_32002_like_reading_it(
        served: UvicornProcess, http: httpx.AsyncClient) -> None:
    session = await _session(http, served, WIDE)
    for method in ("resources/read", "resources/subscribe"):
        response = await session.request(method, {"uri": "public://nothing-here"})
        assert response.status_code == 200, response.text
        error = response.json()["error"]
        assert error["code"] == RESOURCE_NOT_FOUND, error
        assert error["data"] == {"uri": "public://nothing-here"}


async def test_tasks_list_leaves_out_tasks_of_tools_the_caller_may_not_use(
        served: UvicornProcess, http: httpx.AsyncClient) -> None:
    session = await _session(http, served, WIDE)
    secret = await _handshake_task(session)
    public = await _handshake_task(session, "public_tool")
    wide = {t["taskId"] for t in (await session.call("tasks/list"))["tasks"]}
    response = await session.request("tasks/list", {}, **_auth(NARROW))
    narrow = {t["taskId"] for t in assert_answered(response)["tasks"]}
    assert {secret, public} <= wide
    assert public in narrow
    assert secret not in narrow


@pytest.mark.spec("2025-03-26/basic/transports#batching")
async def test_a_batch_over_the_2024_11_05_sse_transport_runs_as_its_caller(
        served: UvicornProcess, http: httpx.AsyncClient) -> None:
    """The deprecated HTTP+SSE transport takes batches from 2025-03-26-style clients: each request of the
    batch runs as the caller who posted it, exactly like the same request sent alone."""
    http.headers.update(_auth(WIDE))
    async with http.stream("GET", served.base_url + "/sse", headers={"accept": "text/event-stream"}) as response:
        stream = SSEReader(response)
        endpoint = (await stream.next()).data
        assert endpoint is not None
        post_url = served.base_url + endpoint

        async def post(body: Any) -> None:
            answer = await http.post(post_url, content=json.dumps(body), headers={"content-type": "application/json"})
            assert answer.status_code == 202, answer.text

        await post({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                               "clientInfo": {"name": "access-tests", "version": "0"}}})
        assert (await stream.message())["id"] == 1
        await post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        await post([{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "secret_tool", "arguments": {}}},
                    {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "secret://doc"}}])
        answers = {a["id"]: a for a in await stream.message()}
    assert answers[2]["result"]["content"][0]["text"] == "secret answer"
    assert answers[3]["result"]["contents"][0]["text"] == "secret doc"


# -- the stateless era -----------------------------------------------------------------------------------
async def _stateless_task(http: httpx.AsyncClient, url: str, tool: str = "secret_tool") -> str:
    created = assert_answered(await stateless_post(http, url, "tools/call", {"name": tool, "arguments": {}}, WIDE,
                                                   tasks=True))
    assert created["resultType"] == "task", created
    task_id: str = created["taskId"]
    return task_id


@pytest.mark.parametrize("case", STATELESS_CASES, ids=str)
async def test_stateless_era_refuses_a_narrow_token_and_answers_a_wide_one(
        case: Case, served: UvicornProcess, http: httpx.AsyncClient) -> None:
    params = _substitute(case.params, await _stateless_task(http, served.url)) if TASK in case.params.values() \
        else case.params
    tasks = case.method.startswith("tasks/")
    assert_refused(await stateless_post(http, served.url, case.method, params, NARROW, tasks=tasks))
    assert_past_the_gate(await stateless_post(http, served.url, case.method, params, WIDE, tasks=tasks))


async def _acknowledged(http: httpx.AsyncClient, url: str, token: str, notifications: dict[str, Any],
                        ) -> AsyncIterator[tuple[dict[str, Any], SSEReader]]:
    body = {"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen",
            "params": {"notifications": notifications, "_meta": _meta(tasks=True)}}
    headers = {"accept": ACCEPT_BOTH, "content-type": "application/json", "mcp-protocol-version": STATELESS,
               "mcp-method": "subscriptions/listen", **_auth(token)}
    async with http.stream("POST", url, content=json.dumps(body), headers=headers) as response:
        assert response.status_code == 200
        stream = SSEReader(response)
        ack = await stream.message()
        assert ack["method"] == "notifications/subscriptions/acknowledged", ack
        yield ack["params"]["notifications"], stream


@pytest.mark.spec(SUBSCRIPTIONS)
async def test_listen_honours_only_resources_the_caller_may_read_and_delivers_nothing_else(
        served: UvicornProcess, http: httpx.AsyncClient) -> None:
    asked = {"resourceSubscriptions": ["secret://doc", "secret://docs/7", "public://doc"]}
    async for honoured, stream in _acknowledged(http, served.url, NARROW, asked):
        assert honoured == {"resourceSubscriptions": ["public://doc"]}
        for uri in ("secret://doc", "secret://docs/7", "public://doc"):
            assert_answered(await stateless_post(http, served.url, "tools/call",
                                                 {"name": "touch", "arguments": {"uri": uri}}, NARROW))
        update = await stream.message()
        assert update["method"] == "notifications/resources/updated"
        assert update["params"] == {"uri": "public://doc", "_meta": {META_SUBSCRIPTION: "listen"}}
    async for honoured, _ in _acknowledged(http, served.url, WIDE, asked):
        assert honoured == {"resourceSubscriptions": sorted(asked["resourceSubscriptions"])}


@pytest.mark.spec(SUBSCRIPTIONS)
async def test_listen_follows_only_tasks_of_tools_the_caller_may_use(
        served: UvicornProcess, http: httpx.AsyncClient) -> None:
    secret = await _stateless_task(http, served.url)
    public = await _stateless_task(http, served.url, "public_tool")
    async for honoured, _ in _acknowledged(http, served.url, NARROW, {"taskIds": [secret, public]}):
        assert honoured == {"taskIds": [public]}
    async for honoured, _ in _acknowledged(http, served.url, WIDE, {"taskIds": [secret, public]}):
        assert honoured == {"taskIds": [secret, public]}


@pytest.mark.parametrize("era", [HANDSHAKE, STATELESS])
async def test_lists_show_the_narrow_token_only_public_components(
        era: str, served: UvicornProcess, http: httpx.AsyncClient) -> None:
    lists = {"tools/list": ("tools", "name"), "prompts/list": ("prompts", "name"),
             "resources/list": ("resources", "uri"), "resources/templates/list": ("resourceTemplates", "uriTemplate"),
             "skills/list": ("skills", "uri")}
    session = await _session(http, served, NARROW) if era == HANDSHAKE else None
    for method, (key, field) in lists.items():
        response = await (session.request(method, {}) if session is not None
                          else stateless_post(http, served.url, method, {}, NARROW))
        names = [item[field] for item in assert_answered(response)[key]]
        assert names, method
        assert not any("secret" in name for name in names), (method, names)
