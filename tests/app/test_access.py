"""``wiremcp.access``: the one gate between a request and what it names, as the dispatcher applies it per
tool, prompt, resource, template and completion reference: ``InsufficientScope`` (HTTP 403 with every
scope needed) before any handler runs, lists that show only what the caller may use, and nothing checked
without a principal. (That every method goes through this gate is ``tests/e2e/test_access.py``'s, and
that no other module decides access ``tests/test_architecture.py``'s.)"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from wiremcp import Context, MCPServer, jsonrpc
from wiremcp.entry import serve
from wiremcp.errors import INVALID_REQUEST
from wiremcp.inbound import Inbound, classify
from wiremcp.jsonrpc import Request
from wiremcp.outcome import Outcome
from wiremcp.principal import Principal
from wiremcp.protocol import META_CAPABILITIES, META_VERSION
from wiremcp.transports.memory import Client
from wiremcp.transports.outcomes import http_status
from wiremcp.types import JSONObject

SPEC = "2025-11-25/basic/authorization"
STATELESS = "2026-07-28"


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


async def _ask(server: MCPServer, method: str, params: JSONObject | None, principal: Any) -> Outcome:
    """One stateless-era request, as the HTTP transport runs it for an authenticated caller."""
    body: JSONObject = {**(params or {}), "_meta": {META_VERSION: STATELESS, META_CAPABILITIES: {}}}

    async def send(message: JSONObject) -> None:
        raise AssertionError(f"nothing related is sent here: {message}")

    inbound = classify(Request(1, method, body), server)
    assert isinstance(inbound, Inbound)
    done = await serve(server, inbound, send, principal=principal)
    assert done is not None
    return done


def status(done: Outcome) -> int:
    """The status the stateless HTTP transport answers this outcome with."""
    return http_status(done, stateless=True)


def _names(done: Outcome, key: str, field: str = "name") -> list[str]:
    assert done.error is None, done.message
    assert not done.internal, done.message
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
    assert status(done) == 403
    assert getattr(done.error, "scopes", None) == scopes
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
        assert (status(refused), getattr(refused.error, "scopes", None)) == (403, ["files:read"])
    assert calls == []
    allowed = await _ask(server, "resources/read", {"uri": "file:///logs/monday"}, ALICE)
    assert allowed.message["result"]["contents"][0]["text"] == "logs of monday"
    assert calls == ["logs"]


@pytest.mark.spec(f"{SPEC}#scope-challenge-handling")
async def test_broader_scopes_allow_the_narrower_ones() -> None:
    calls: list[str] = []
    server = guarded_server(calls)
    assert status(await _ask(server, "tools/call", {"name": "purge", "arguments": {}}, ADMIN)) == 200
    assert status(await _ask(server, "prompts/get", {"name": "audit"}, ADMIN)) == 200
    assert status(await _ask(server, "resources/read", {"uri": "file:///secret.txt"}, ADMIN)) == 200
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
    assert status(await _ask(server, "tools/call", {"name": "purge", "arguments": {}}, ALICE)) == 403
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

    @server.prompt(name="audit", scopes=["admin"], replace=True)  # one that takes the completed argument
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
    assert status(refused) == 403
    assert getattr(refused.error, "scopes", None) == scopes
    allowed = await _ask(server, "completion/complete", params, ADMIN)
    assert status(allowed) == 200, allowed.message
    assert allowed.message["result"]["completion"]["values"] in (["secrets"], ["monday"])


def _tool_lookups(path: Path) -> list[int]:
    """The lines of ``path`` that look a tool up by name among a server's tools (``….tools.get(name)``,
    ``….tools[name]`` read)."""
    lines: list[int] = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and getattr(node.func.value, "attr", None) == "tools") or (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                and getattr(node.value, "attr", None) == "tools"):
            lines.append(node.lineno)
    return lines


def test_a_tool_is_looked_up_in_the_access_gate_only() -> None:
    """A stateless ``tools/call``'s mirrored headers are checked against the tool the gate found
    (``called_tool``), and the gate judges the call on that lookup: no other module looks a tool up."""
    root = Path(__file__).resolve().parents[2]
    offenders = {rel: lines for folder in ("app", "transports", "auth") for path in sorted((root / folder).rglob("*.py"))
                 if (rel := path.relative_to(root).as_posix()) != "app/access.py" and (lines := _tool_lookups(path))}
    assert not offenders, offenders
    assert _tool_lookups(root / "app" / "access.py")
