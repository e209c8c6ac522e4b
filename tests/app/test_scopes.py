"""Scopes: the rules (hierarchies, what is missing), and how the dispatcher applies them per tool, prompt
and resource: ``InsufficientScope`` (HTTP 403 with every scope needed) before any handler runs, and
lists that show only what the caller may use."""

from __future__ import annotations

from typing import Any

import pytest

from wiremcp import Context, MCPServer, jsonrpc
from wiremcp.answer import Answer, answer
from wiremcp.errors import INVALID_REQUEST, InsufficientScope
from wiremcp.jsonrpc import Request
from wiremcp.principal import Principal
from wiremcp.protocol import META_CAPABILITIES, META_VERSION
from wiremcp.scopes import authorize, covers, missing, parse
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

SPEC = "2025-11-25/basic/authorization"
STATELESS = "2026-07-28"


# -- the rules ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("granted", "needed", "expected"), [
    ("files", "files", True),
    ("files", "files:read", True),
    ("files", "files:read:deep", True),
    ("files:read", "files", False),
    ("files:read", "files:write", False),
    ("file", "files:read", False),
    ("files:", "files:read", False),
    ("", "files", False),
])
@pytest.mark.spec(f"{SPEC}#scope-challenge-handling")
def test_a_broader_scope_covers_a_narrower_one(granted: str, needed: str, expected: bool) -> None:
    assert covers(granted, needed) is expected


def test_missing_keeps_the_order_of_what_is_needed() -> None:
    assert missing(["files"], ["files:read", "mail:send", "files:write", "calendar"]) == ["mail:send", "calendar"]
    assert missing([], ["a", "b"]) == ["a", "b"]
    assert missing(["a"], []) == []


@pytest.mark.parametrize(("value", "expected"), [
    ("a b  c", {"a", "b", "c"}), (["a", "b"], {"a", "b"}), (("a",), {"a"}), ("", set()), (None, set()),
    (42, set()), ({"a": 1}, set())])
def test_parse_reads_scope_strings_and_scp_lists(value: Any, expected: set[str]) -> None:
    assert parse(value) == frozenset(expected)


def test_authorize_names_every_scope_needed_not_only_the_missing_ones() -> None:
    principal = Principal("iss", "alice", scopes=frozenset({"files:read"}))
    with pytest.raises(InsufficientScope) as raised:
        authorize(["files:read", "files:write"], principal)
    assert raised.value.scopes == ["files:read", "files:write"]
    assert raised.value.code == INVALID_REQUEST
    assert raised.value.to_error()["data"] == {"requiredScopes": ["files:read", "files:write"]}
    authorize(["files:read"], principal)
    authorize([], principal)


def test_without_a_principal_nothing_is_checked() -> None:
    authorize(["admin"], None)  # stdio, or HTTP without auth


def test_a_principal_without_scopes_fails_closed() -> None:
    with pytest.raises(InsufficientScope) as raised:
        authorize(["admin"], "iss|alice")  # a bare key carries no scopes: refuse rather than wave through
    assert raised.value.scopes == ["admin"]


# -- in the dispatcher ----------------------------------------------------------------------------------------------
def guarded_server(calls: list[str], *, filter_lists_by_scope: bool = True) -> MCPServer:
    server = MCPServer("scoped", filter_lists_by_scope=filter_lists_by_scope)

    @server.tool()
    async def public(ctx: Context) -> str:
        calls.append("public")
        return "public"

    @server.tool(scopes=["files:write", "admin:delete"])
    async def purge(ctx: Context) -> str:
        calls.append("purge")
        return "purged"

    @server.prompt(scopes=["admin"])
    async def audit() -> str:
        calls.append("audit")
        return "audit"

    @server.prompt()
    async def hello() -> str:
        return "hello"

    @server.resource("file:///secret.txt", scopes=["files:read"])
    async def secret() -> str:
        calls.append("secret")
        return "s3cr3t"

    @server.resource("file:///readme.txt")
    async def readme() -> str:
        return "read me"

    @server.resource("file:///logs/{day}", scopes=["files:read"])
    async def logs(day: str) -> str:
        calls.append("logs")
        return f"logs of {day}"

    return server


async def _ask(server: MCPServer, method: str, params: JSONObject | None, principal: Any) -> Answer:
    """One stateless-era request, as the HTTP transport runs it for an authenticated caller."""
    body: JSONObject = {**(params or {}), "_meta": {META_VERSION: STATELESS, META_CAPABILITIES: {}}}

    async def send(message: JSONObject) -> None:
        raise AssertionError(f"nothing related is sent here: {message}")

    return await answer(server, Request(1, method, body), send, stateless=True, principal=principal)


def _names(done: Answer, key: str, field: str = "name") -> list[str]:
    assert done.status == 200, done.message
    wire = jsonrpc.loads(jsonrpc.dumps(done.message))  # lists go out pre-encoded: read them as the client does
    return [item[field] for item in wire["result"][key]]


ALICE = Principal("https://as.example.test", "alice", scopes=frozenset({"files:read"}))
ADMIN = Principal("https://as.example.test", "root", scopes=frozenset({"files", "admin"}))


@pytest.mark.parametrize(("method", "params", "scopes"), [
    ("tools/call", {"name": "purge", "arguments": {}}, ["files:write", "admin:delete"]),
    ("prompts/get", {"name": "audit"}, ["admin"]),
])
@pytest.mark.spec(f"{SPEC}#runtime-insufficient-scope-errors")
async def test_a_call_without_the_scopes_gets_403_before_the_handler(method: str, params: JSONObject,
                                                                     scopes: list[str]) -> None:
    calls: list[str] = []
    done = await _ask(guarded_server(calls), method, params, ALICE)
    assert done.status == 403
    assert done.scopes == scopes
    assert done.message["error"]["code"] == INVALID_REQUEST
    assert done.message["error"]["data"] == {"requiredScopes": scopes}
    assert calls == []


@pytest.mark.spec(f"{SPEC}#runtime-insufficient-scope-errors")
async def test_reading_a_scoped_resource_or_template_needs_its_scopes() -> None:
    calls: list[str] = []
    server = guarded_server(calls)
    nobody = Principal("https://as.example.test", "nobody")
    for uri in ("file:///secret.txt", "file:///logs/monday"):
        refused = await _ask(server, "resources/read", {"uri": uri}, nobody)
        assert (refused.status, refused.scopes) == (403, ["files:read"])
    assert calls == []
    allowed = await _ask(server, "resources/read", {"uri": "file:///logs/monday"}, ALICE)
    assert allowed.message["result"]["contents"][0]["text"] == "logs of monday"
    assert calls == ["logs"]


@pytest.mark.spec(f"{SPEC}#scope-challenge-handling")
async def test_broader_scopes_allow_the_narrower_ones() -> None:
    calls: list[str] = []
    server = guarded_server(calls)
    assert (await _ask(server, "tools/call", {"name": "purge", "arguments": {}}, ADMIN)).status == 200
    assert (await _ask(server, "prompts/get", {"name": "audit"}, ADMIN)).status == 200
    assert (await _ask(server, "resources/read", {"uri": "file:///secret.txt"}, ADMIN)).status == 200
    assert calls == ["purge", "audit", "secret"]


@pytest.mark.spec(f"{SPEC}#access-token-privilege-restriction")
async def test_lists_show_only_what_the_caller_may_use() -> None:
    server = guarded_server([])
    assert _names(await _ask(server, "tools/list", None, ALICE), "tools") == ["public"]
    assert _names(await _ask(server, "prompts/list", None, ALICE), "prompts") == ["hello"]
    assert _names(await _ask(server, "resources/list", None, ALICE), "resources", "uri") == [
        "file:///secret.txt", "file:///readme.txt"]
    nobody = Principal("https://as.example.test", "nobody")
    assert _names(await _ask(server, "resources/list", None, nobody), "resources", "uri") == ["file:///readme.txt"]
    assert _names(await _ask(server, "resources/templates/list", None, nobody), "resourceTemplates",
                  "uriTemplate") == []
    assert _names(await _ask(server, "tools/list", None, ADMIN), "tools") == ["public", "purge"]
    assert _names(await _ask(server, "prompts/list", None, ADMIN), "prompts") == ["audit", "hello"]


async def test_unfiltered_lists_show_everything_and_calls_are_still_checked() -> None:
    calls: list[str] = []
    server = guarded_server(calls, filter_lists_by_scope=False)
    assert _names(await _ask(server, "tools/list", None, ALICE), "tools") == ["public", "purge"]
    assert (await _ask(server, "tools/call", {"name": "purge", "arguments": {}}, ALICE)).status == 403
    assert calls == []


async def test_without_authentication_nothing_is_filtered_or_refused() -> None:
    """stdio (and HTTP without auth): no principal, so scopes are not checked."""
    calls: list[str] = []
    async with Client(guarded_server(calls)) as client:
        assert [tool["name"] for tool in await client.list_tools()] == ["public", "purge"]
        result = await client.call_tool("purge", {})
        assert result["content"][0]["text"] == "purged"
    assert calls == ["purge"]


async def test_the_tool_definition_does_not_leak_its_scopes() -> None:
    server = guarded_server([])
    listed = jsonrpc.loads(jsonrpc.dumps((await _ask(server, "tools/list", None, ADMIN)).message))
    (purge,) = [t for t in listed["result"]["tools"] if t["name"] == "purge"]
    assert "scopes" not in purge


@pytest.mark.parametrize(("ref", "argument", "scopes"), [
    ({"type": "ref/prompt", "name": "audit"}, "topic", ["admin"]),
    ({"type": "ref/resource", "uri": "file:///logs/{day}"}, "day", ["files:read"]),
])
@pytest.mark.spec(f"{SPEC}#runtime-insufficient-scope-errors")
async def test_completing_a_scoped_prompt_or_template_needs_its_scopes(ref: JSONObject, argument: str,
                                                                     scopes: list[str]) -> None:
    server = guarded_server([])

    @server.prompt(name="audit", scopes=["admin"])
    async def audit(topic: str) -> str:
        return topic

    @server.completion(prompt="audit", argument="topic")
    def topics(value: str, arguments: dict[str, str]) -> list[str]:
        return ["secrets"]

    @server.completion(resource_template="file:///logs/{day}", argument="day")
    def days(value: str, arguments: dict[str, str]) -> list[str]:
        return ["monday"]

    params: JSONObject = {"ref": ref, "argument": {"name": argument, "value": "x"}}
    nobody = Principal("https://as.example.test", "nobody", scopes=frozenset())
    refused = await _ask(server, "completion/complete", params, nobody)
    assert refused.status == 403
    assert refused.scopes == scopes
    allowed = await _ask(server, "completion/complete", params, ADMIN)
    assert allowed.status == 200, allowed.message
    assert allowed.message["result"]["completion"]["values"] in (["secrets"], ["monday"])
