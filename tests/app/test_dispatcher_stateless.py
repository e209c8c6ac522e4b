"""The stateless era (2026-07-28) as a client sees it, in process: ``wiremcp.transports.memory.Client`` speaking
2026-07-28 (per-request ``_meta``, input_required retried automatically), plus ``request_raw`` for the wire.

Multi round-trip requests (both the ``ctx.elicit`` replay and the low-level ``InputRequired``),
the capability checks on input requests, the shape of every result, and ``subscriptions/listen``.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest

from wiremcp import Context, InputRequired, MCPServer, jsonrpc
from wiremcp.context import ElicitResult
from wiremcp.errors import INTERNAL_ERROR, INVALID_PARAMS, MISSING_CLIENT_CAPABILITY
from wiremcp.prompts import Prompt
from wiremcp.protocol import META_SERVER_INFO, META_SUBSCRIPTION
from wiremcp.tools import Tool
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

VERSION = "2026-07-28"
BOUND = 10.0
"""Failure bound for anything awaited here; nothing should come close."""

MRTR = "2026-07-28/basic/patterns/mrtr"
CACHING = "2026-07-28/server/utilities/caching"
SUBSCRIPTIONS = "2026-07-28/basic/patterns/subscriptions"

NAME_SCHEMA: JSONObject = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
SERVER_INFO = {"name": "stateless", "version": "3.1", "title": "Stateless"}

# Low-level input requests, by kind.
INPUTS: dict[str, JSONObject] = {
    "form": {"method": "elicitation/create",
             "params": {"mode": "form", "message": "Name?", "requestedSchema": NAME_SCHEMA}},
    "form-no-mode": {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": NAME_SCHEMA}},
    "url": {"method": "elicitation/create", "params": {"mode": "url", "message": "Sign in",
                                                        "url": "https://example.com/auth", "elicitationId": "e-1"}},
    "sampling": {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 10}},
    "sampling-tools": {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 10,
        "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}},
    "sampling-tool-choice": {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 10,
        "toolChoice": {"mode": "auto"}}},
    "roots": {"method": "roots/list"},
}
ANSWERS: dict[str, JSONObject] = {
    "elicitation/create": {"action": "accept", "content": {"name": "Ada"}},
    "sampling/createMessage": {"role": "assistant", "content": {"type": "text", "text": "Hello!"},
                               "model": "m", "stopReason": "endTurn"},
    "roots/list": {"roots": [{"uri": "file:///work", "name": "work"}]},
}


def _server(**kwargs: Any) -> tuple[MCPServer, list[str]]:
    """A server whose handlers ask the client for input in every way; ``runs`` records handler progress."""
    server = MCPServer("stateless", "3.1", title="Stateless", **kwargs)
    runs: list[str] = []

    @server.tool()
    async def interview(ctx: Context) -> str:
        runs.append("start")
        name = await ctx.elicit("Name?", NAME_SCHEMA)
        runs.append("elicited")
        reply = await ctx.sample(f"Greet {(name.content or {}).get('name')}", max_tokens=10)
        runs.append("sampled")
        roots = await ctx.list_roots()
        runs.append("listed")
        return f"{(name.content or {}).get('name')} | {reply['content']['text']} | {[r['uri'] for r in roots]}"

    @server.tool()
    async def ask(ctx: Context) -> str:
        answer: ElicitResult[Any] = await ctx.elicit("Name?", NAME_SCHEMA)
        return f"{answer.action} {answer.content}"

    @server.tool()
    async def ask_url(ctx: Context) -> str:
        return (await ctx.elicit_url("Sign in", "https://example.com/auth", "e-1")).action

    @server.tool()
    async def think(ctx: Context) -> str:
        return str((await ctx.sample("Hi", max_tokens=10))["content"]["text"])

    @server.tool()
    async def think_with_tools(ctx: Context) -> str:
        reply = await ctx.sample("Hi", tools=[{"name": "t", "inputSchema": {"type": "object"}}])
        return str(reply["content"]["text"])

    @server.tool()
    async def roots(ctx: Context) -> list[str]:
        return [r["uri"] for r in await ctx.list_roots()]

    @server.tool()
    def low(kind: str, ctx: Context) -> str | InputRequired:
        """Low level: ask for one input of ``kind`` under key "k"."""
        if "k" in ctx.input_responses:
            return f"k={json.dumps(ctx.input_responses['k'], sort_keys=True)} state={ctx.request_state}"
        return InputRequired({"k": INPUTS[kind]}, request_state=f"asked-{kind}")

    @server.tool()
    def raised(ctx: Context) -> str:
        if "k" in ctx.input_responses:
            return f"tool got {ctx.input_responses['k']['content']['name']}, state={ctx.request_state}"
        raise InputRequired({"k": INPUTS["form"]}, request_state="tool-state")

    @server.tool()
    def returned(ctx: Context) -> str | InputRequired:
        if "k" in ctx.input_responses:
            return f"tool got {ctx.input_responses['k']['content']['name']}, state={ctx.request_state}"
        return InputRequired({"k": INPUTS["form"]}, request_state="tool-state")

    @server.tool()
    def two_step(ctx: Context) -> str | InputRequired:
        """Two rounds of low-level input, its progress carried in its own state."""
        if ctx.request_state is None:
            return InputRequired({"first": INPUTS["form"]}, request_state="step-1")
        if ctx.request_state == "step-1":
            return InputRequired({"second": INPUTS["roots"]}, request_state="step-2")
        return f"{ctx.request_state}: {sorted(ctx.input_responses)}"

    @server.prompt()
    def raised_prompt(ctx: Context) -> str:
        if "k" in ctx.input_responses:
            return f"prompt got {ctx.input_responses['k']['content']['name']}, state={ctx.request_state}"
        raise InputRequired({"k": INPUTS["form"]}, request_state="prompt-state")

    @server.prompt()
    def returned_prompt(ctx: Context) -> str | InputRequired:
        if "k" in ctx.input_responses:
            return f"prompt got {ctx.input_responses['k']['content']['name']}, state={ctx.request_state}"
        return InputRequired({"k": INPUTS["form"]}, request_state="prompt-state")

    @server.prompt()
    def topic(subject: str) -> str:
        return f"Talk about {subject}"

    @server.completion(prompt="topic", argument="subject")
    def complete_subject(value: str, arguments: dict[str, str]) -> list[str]:
        raise InputRequired({"k": INPUTS["form"]})

    @server.resource("test://raised", mime_type="text/plain")
    def raised_resource(ctx: Context) -> str:
        if "k" in ctx.input_responses:
            return f"resource got {ctx.input_responses['k']['content']['name']}, state={ctx.request_state}"
        raise InputRequired({"k": INPUTS["form"]}, request_state="resource-state")

    @server.resource("test://returned", mime_type="text/plain")
    def returned_resource(ctx: Context) -> str | InputRequired:
        if "k" in ctx.input_responses:
            return f"resource got {ctx.input_responses['k']['content']['name']}, state={ctx.request_state}"
        return InputRequired({"k": INPUTS["form"]}, request_state="resource-state")

    @server.resource("test://item/{x}")
    def item(x: str) -> str:
        return f"item {x}"

    @server.resource("test://cached", ttl_ms=5000, cache_scope="public")
    def cached() -> str:
        return "cached"

    return server, runs


class Recorder:
    """Client-side handlers for every input kind, counting their calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def elicitation(self, params: JSONObject) -> JSONObject:
        self.calls.append("elicitation/create")
        return ANSWERS["elicitation/create"]

    async def sampling(self, params: JSONObject) -> JSONObject:
        self.calls.append("sampling/createMessage")
        return ANSWERS["sampling/createMessage"]

    async def roots(self, params: JSONObject) -> JSONObject:
        self.calls.append("roots/list")
        return ANSWERS["roots/list"]

    def client(self, server: MCPServer, **kwargs: Any) -> Client:
        return Client(server, elicitation=self.elicitation, sampling=self.sampling, roots=self.roots, **kwargs)


class FrameClient(Client):
    """The in-memory client, also recording every message the server writes to it."""

    def __init__(self, server: MCPServer, **kwargs: Any) -> None:
        super().__init__(server, **kwargs)
        self.frames: list[JSONObject] = []

    async def _receive(self, message: JSONObject | list[JSONObject]) -> None:
        items = message if isinstance(message, list) else [message]
        self.frames.extend(jsonrpc.loads(jsonrpc.dumps(item)) for item in items)
        await super()._receive(message)

    def server_requests(self) -> list[JSONObject]:
        return [f for f in self.frames if "method" in f and "id" in f]


def _stateless(server: MCPServer, **kwargs: Any) -> FrameClient:
    return FrameClient(server, protocol_version=VERSION, **kwargs)


def _input_required(response: JSONObject) -> JSONObject:
    """The InputRequiredResult of a response, checked for what every one must (and must not) carry."""
    assert "result" in response, response
    result: JSONObject = response["result"]
    assert result["resultType"] == "input_required", result
    assert not {"ttlMs", "cacheScope"} & result.keys(), "input_required results are not cacheable"
    assert result["_meta"] == {META_SERVER_INFO: SERVER_INFO}
    assert isinstance(result["requestState"], str)
    assert result["requestState"]
    return result


def _error(response: JSONObject) -> JSONObject:
    assert "error" in response, response
    assert "result" not in response, response
    error: JSONObject = response["error"]
    return error


def _text(result: JSONObject) -> str:
    assert result["resultType"] == "complete", result
    if "contents" in result:
        text: str = result["contents"][0]["text"]
    elif "messages" in result:
        text = result["messages"][0]["content"]["text"]
    else:
        text = result["content"][0]["text"]
    return text


# -- ctx.elicit / sample / list_roots: replay across rounds ----------------------------------------------


@pytest.mark.spec(f"{MRTR}#basic-workflow")
@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
async def test_high_level_inputs_replay_and_each_is_asked_once() -> None:
    server, runs = _server()
    recorder = Recorder()
    async with recorder.client(server, protocol_version=VERSION) as client:
        result = await client.call_tool("interview")
    assert _text(result) == "Ada | Hello! | ['file:///work']"
    assert result["_meta"] == {META_SERVER_INFO: SERVER_INFO}
    # one question per round; the client is never asked the same thing twice
    assert recorder.calls == ["elicitation/create", "sampling/createMessage", "roots/list"]
    # the body before each input point ran again in every round: four rounds for three inputs
    assert runs == ["start",
                    "start", "elicited",
                    "start", "elicited", "sampled",
                    "start", "elicited", "sampled", "listed"]


@pytest.mark.spec(f"{MRTR}#basic-workflow")
@pytest.mark.spec(f"{MRTR}#inputrequests")
@pytest.mark.spec(f"{MRTR}#client-requirements-basic-workflow")
async def test_high_level_input_keys_are_stable_and_earlier_answers_come_from_the_state() -> None:
    server, runs = _server()
    async with _stateless(server, capabilities={"elicitation": {}, "sampling": {}, "roots": {}}) as client:
        params = client.with_meta({"name": "interview", "arguments": {}})

        async def round_trip(answers: JSONObject | None, state: str | None) -> JSONObject:
            retry = dict(params)
            if answers is not None:
                retry["inputResponses"] = answers
            if state is not None:
                retry["requestState"] = state
            return await client.request_raw("tools/call", retry)

        first = _input_required(await round_trip(None, None))
        assert list(first["inputRequests"]) == ["elicitation-1"]
        assert first["inputRequests"]["elicitation-1"] == {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Name?", "requestedSchema": NAME_SCHEMA}}
        # retried without an answer: the same input point, under the same key
        again = _input_required(await round_trip({}, first["requestState"]))
        assert again["inputRequests"] == first["inputRequests"]

        second = _input_required(await round_trip({"elicitation-1": ANSWERS["elicitation/create"]},
                                                  first["requestState"]))
        assert list(second["inputRequests"]) == ["sampling-2"]
        assert second["inputRequests"]["sampling-2"]["params"]["messages"][0]["content"]["text"] == "Greet Ada"
        # the state is sealed: the answer it carries is not readable in it
        raw = base64.urlsafe_b64decode(second["requestState"] + "=" * (-len(second["requestState"]) % 4))
        assert b"Ada" not in raw

        # each retry brings only the newest answer; the earlier ones come back from the state
        third = _input_required(await round_trip({"sampling-2": ANSWERS["sampling/createMessage"]},
                                                 second["requestState"]))
        assert list(third["inputRequests"]) == ["roots-3"]
        done = await round_trip({"roots-3": ANSWERS["roots/list"]}, third["requestState"])
        assert _text(done["result"]) == "Ada | Hello! | ['file:///work']"
        assert client.server_requests() == []
    assert runs.count("start") == 5


@pytest.mark.spec(f"{MRTR}#error-handling")
async def test_high_level_answers_with_extra_keys_are_ignored() -> None:
    server, _runs = _server()
    async with _stateless(server, capabilities={"elicitation": {}}) as client:
        first = _input_required(await client.request_raw("tools/call", client.with_meta({"name": "ask"})))
        done = await client.request_raw("tools/call", client.with_meta({
            "name": "ask", "requestState": first["requestState"],
            "inputResponses": {"elicitation-1": ANSWERS["elicitation/create"], "unasked": {"action": "decline"}}}))
    assert _text(done["result"]) == "accept {'name': 'Ada'}"


# -- low-level InputRequired ----------------------------------------------------------------------------

LOW_LEVEL = [
    pytest.param("tools/call", {"name": "raised"}, "tool got Ada, state=tool-state", id="tool-raised"),
    pytest.param("tools/call", {"name": "returned"}, "tool got Ada, state=tool-state", id="tool-returned"),
    pytest.param("prompts/get", {"name": "raised_prompt"}, "prompt got Ada, state=prompt-state", id="prompt-raised"),
    pytest.param("prompts/get", {"name": "returned_prompt"}, "prompt got Ada, state=prompt-state",
                 id="prompt-returned"),
    pytest.param("resources/read", {"uri": "test://raised"}, "resource got Ada, state=resource-state",
                 id="resource-raised"),
    pytest.param("resources/read", {"uri": "test://returned"}, "resource got Ada, state=resource-state",
                 id="resource-returned"),
]


@pytest.mark.spec(f"{MRTR}#supported-requests")
@pytest.mark.spec(f"{MRTR}#inputrequiredresult")
@pytest.mark.spec(f"{CACHING}#cacheable-results")
@pytest.mark.parametrize(("method", "params", "expected"), LOW_LEVEL)
async def test_low_level_input_required_round_trip(method: str, params: JSONObject, expected: str) -> None:
    server, _runs = _server()
    async with _stateless(server, capabilities={"elicitation": {}}) as client:
        first = _input_required(await client.request_raw(method, client.with_meta(params)))
        assert first["inputRequests"] == {"k": INPUTS["form"]}
        assert "tool-state" not in first["requestState"]  # the handler's state travels sealed too
        done = await client.request_raw(method, client.with_meta({
            **params, "inputResponses": {"k": ANSWERS["elicitation/create"]}, "requestState": first["requestState"]}))
        assert client.server_requests() == []
    result = done["result"]
    assert _text(result) == expected
    assert result["_meta"] == {META_SERVER_INFO: SERVER_INFO}
    if method == "resources/read":  # a complete read is cacheable again
        assert (result["ttlMs"], result["cacheScope"]) == (0, "private")


@pytest.mark.spec(f"{MRTR}#supported-requests")
@pytest.mark.parametrize(("method", "params", "expected"), LOW_LEVEL)
async def test_low_level_input_required_through_the_retrying_client(method: str, params: JSONObject,
                                                                    expected: str) -> None:
    server, _runs = _server()
    recorder = Recorder()
    async with recorder.client(server, protocol_version=VERSION) as client:
        result = await client.request(method, params)
    assert _text(result) == expected
    assert recorder.calls == ["elicitation/create"]


@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
async def test_low_level_state_carries_progress_across_rounds() -> None:
    server, _runs = _server()
    recorder = Recorder()
    async with recorder.client(server, protocol_version=VERSION) as client:
        result = await client.call_tool("two_step")
    assert _text(result) == "step-2: ['second']"
    assert recorder.calls == ["elicitation/create", "roots/list"]


@pytest.mark.spec(f"{MRTR}#error-handling")
async def test_low_level_answers_with_extra_keys_are_ignored() -> None:
    server, _runs = _server()
    async with _stateless(server, capabilities={"elicitation": {}}) as client:
        done = await client.request_raw("tools/call", client.with_meta({"name": "raised", "inputResponses": {
            "k": ANSWERS["elicitation/create"], "extra": {"anything": True}, "elicitation-1": {}}}))
    assert _text(done["result"]) == "tool got Ada, state=None"


# -- where input may not be asked for ---------------------------------------------------------------------


@pytest.mark.spec(f"{MRTR}#supported-requests")
@pytest.mark.parametrize("version", [VERSION, "2025-11-25"])
async def test_completion_raising_input_required_is_an_internal_error(version: str) -> None:
    server, _runs = _server()
    recorder = Recorder()
    async with FrameClient(server, protocol_version=version, elicitation=recorder.elicitation) as client:
        params: JSONObject = {"ref": {"type": "ref/prompt", "name": "topic"},
                              "argument": {"name": "subject", "value": "x"}}
        response = await client.request_raw("completion/complete",
                                            client.with_meta(params) if client.stateless else params)
        assert client.server_requests() == []
    assert _error(response)["code"] == INTERNAL_ERROR
    assert recorder.calls == []


@pytest.mark.spec(f"{MRTR}#supported-requests")
@pytest.mark.parametrize("how", ["ctx.elicit", "ctx.sample", "ctx.list_roots", "raise"])
async def test_input_from_a_method_that_may_not_return_it_is_an_internal_error(
        monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """A completion handler that asks for input: an internal error, never an input_required result."""
    server, _runs = _server()

    async def complete(params: JSONObject, ctx: Context) -> JSONObject:
        if how == "ctx.elicit":
            await ctx.elicit("Which?", NAME_SCHEMA)
        elif how == "ctx.sample":
            await ctx.sample("Which?")
        elif how == "ctx.list_roots":
            await ctx.list_roots()
        else:
            raise InputRequired({"k": INPUTS["form"]}, request_state="s")
        return {"completion": {"values": []}}

    monkeypatch.setitem(server.dispatcher._stateless_handlers, "completion/complete", complete)
    async with _stateless(server, capabilities={"elicitation": {}, "sampling": {}, "roots": {}}) as client:
        response = await client.request_raw("completion/complete", client.with_meta({
            "ref": {"type": "ref/prompt", "name": "topic"}, "argument": {"name": "subject", "value": "x"}}))
        assert client.server_requests() == []
    assert _error(response)["code"] == INTERNAL_ERROR


# -- input requests need the client's declared capabilities -----------------------------------------------


@pytest.mark.spec("2026-07-28/basic/index#_meta")
@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
@pytest.mark.spec("2026-07-28/client/elicitation#capabilities")
@pytest.mark.spec("2026-07-28/client/sampling#capabilities")
@pytest.mark.spec("2026-07-28/client/roots#capabilities")
@pytest.mark.parametrize(
    ("arguments", "capabilities", "required"),
    [
        pytest.param({"name": "ask"}, {}, {"elicitation": {}}, id="elicit"),
        pytest.param({"name": "ask"}, {"sampling": {}}, {"elicitation": {}}, id="elicit-other-declared"),
        pytest.param({"name": "ask"}, {"elicitation": {"url": {}}}, {"elicitation": {"form": {}}},
                     id="elicit-url-only-client"),
        pytest.param({"name": "ask_url"}, {}, {"elicitation": {"url": {}}}, id="elicit-url"),
        pytest.param({"name": "ask_url"}, {"elicitation": {}}, {"elicitation": {"url": {}}}, id="elicit-url-form-only"),
        pytest.param({"name": "think"}, {"elicitation": {}}, {"sampling": {}}, id="sample"),
        pytest.param({"name": "think_with_tools"}, {"sampling": {}}, {"sampling": {"tools": {}}},
                     id="sample-with-tools"),
        pytest.param({"name": "roots"}, {"sampling": {}}, {"roots": {}}, id="roots"),
        pytest.param({"name": "low", "arguments": {"kind": "form"}}, {}, {"elicitation": {}}, id="low-form"),
        pytest.param({"name": "low", "arguments": {"kind": "form-no-mode"}}, {"elicitation": {"url": {}}},
                     {"elicitation": {"form": {}}}, id="low-form-to-url-only-client"),
        pytest.param({"name": "low", "arguments": {"kind": "url"}}, {"elicitation": {"form": {}}},
                     {"elicitation": {"url": {}}}, id="low-url"),
        pytest.param({"name": "low", "arguments": {"kind": "sampling"}}, {"roots": {}}, {"sampling": {}},
                     id="low-sampling"),
        pytest.param({"name": "low", "arguments": {"kind": "sampling-tools"}}, {"sampling": {}},
                     {"sampling": {"tools": {}}}, id="low-sampling-tools"),
        pytest.param({"name": "low", "arguments": {"kind": "sampling-tool-choice"}}, {"sampling": {}},
                     {"sampling": {"tools": {}}}, id="low-sampling-tool-choice"),
        pytest.param({"name": "low", "arguments": {"kind": "roots"}}, {"elicitation": {}}, {"roots": {}},
                     id="low-roots"),
    ],
)
async def test_input_requests_for_undeclared_capabilities_are_refused(
        arguments: JSONObject, capabilities: JSONObject, required: JSONObject) -> None:
    server, _runs = _server()
    async with _stateless(server, capabilities=capabilities) as client:
        response = await client.request_raw("tools/call", client.with_meta({"arguments": {}, **arguments}))
        assert client.server_requests() == []
    error = _error(response)
    assert error["code"] == MISSING_CLIENT_CAPABILITY, error
    assert error["data"] == {"requiredCapabilities": required}


@pytest.mark.spec("2026-07-28/client/elicitation#capabilities")
@pytest.mark.spec("2026-07-28/client/sampling#capabilities")
@pytest.mark.parametrize(
    ("kind", "capabilities"),
    [
        ("form", {"elicitation": {}}),  # an empty elicitation capability means form
        ("form-no-mode", {"elicitation": {"form": {}, "url": {}}}),
        ("url", {"elicitation": {"url": {}}}),
        ("sampling-tools", {"sampling": {"tools": {}}}),
        ("roots", {"roots": {}}),
    ],
)
async def test_input_requests_for_declared_capabilities_are_sent(kind: str, capabilities: JSONObject) -> None:
    server, _runs = _server()
    async with _stateless(server, capabilities=capabilities) as client:
        result = _input_required(await client.request_raw("tools/call", client.with_meta(
            {"name": "low", "arguments": {"kind": kind}})))
    assert result["inputRequests"] == {"k": INPUTS[kind]}


# -- the handshake era: the same handlers, real requests to the client ----------------------------------


@pytest.mark.spec("2026-07-28/basic/versioning#backward-compatibility-with-initialization-based-versions")
@pytest.mark.spec("2025-11-25/client/elicitation#form-mode-elicitation-requests")
@pytest.mark.parametrize(("method", "params", "expected"), LOW_LEVEL)
async def test_handshake_session_serves_low_level_input_required_with_requests(
        method: str, params: JSONObject, expected: str) -> None:
    server, _runs = _server()
    recorder = Recorder()
    async with FrameClient(server, elicitation=recorder.elicitation) as client:
        result = await client.request(method, params)
        asked = client.server_requests()
    assert _text({"resultType": "complete", **result}) == expected
    assert not {"resultType", "_meta"} & result.keys(), result
    assert [r["method"] for r in asked] == ["elicitation/create"]
    assert asked[0]["params"] == INPUTS["form"]["params"]
    assert recorder.calls == ["elicitation/create"]


@pytest.mark.spec("2026-07-28/basic/versioning#backward-compatibility-with-initialization-based-versions")
async def test_handshake_session_serves_several_low_level_rounds() -> None:
    server, _runs = _server()
    recorder = Recorder()
    async with recorder.client(server) as client:
        result = await client.call_tool("two_step")
        low = await client.call_tool("low", {"kind": "sampling"})
    assert result["content"][0]["text"] == "step-2: ['second']"
    assert recorder.calls == ["elicitation/create", "roots/list", "sampling/createMessage"]
    assert low["content"][0]["text"] == (
        f"k={json.dumps(ANSWERS['sampling/createMessage'], sort_keys=True)} state=asked-sampling")


# -- malformed inputResponses -----------------------------------------------------------------------------


@pytest.mark.spec(f"{MRTR}#error-handling")
@pytest.mark.parametrize(("method", "params"), [
    ("tools/call", {"name": "raised"}),
    ("tools/call", {"name": "ask"}),
    ("prompts/get", {"name": "raised_prompt"}),
    ("resources/read", {"uri": "test://raised"}),
])
@pytest.mark.parametrize("responses", [[], "k", 3, True, {"k": "accept"}, {"k": []}, {"k": 1},
                                       {"k": ANSWERS["elicitation/create"], "other": None}])
async def test_malformed_input_responses_are_invalid_params(method: str, params: JSONObject, responses: Any) -> None:
    server, _runs = _server()
    async with _stateless(server, capabilities={"elicitation": {}}) as client:
        response = await client.request_raw(method, client.with_meta({**params, "inputResponses": responses}))
    error = _error(response)
    assert error["code"] == INVALID_PARAMS, error
    assert "inputResponses" in error["message"]


# -- what every result carries ---------------------------------------------------------------------------


CACHEABLE: list[tuple[str, JSONObject]] = [
    ("server/discover", {}),
    ("tools/list", {}),
    ("prompts/list", {}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "test://raised", "inputResponses": {"k": ANSWERS["elicitation/create"]}}),
]
NOT_CACHEABLE: list[tuple[str, JSONObject]] = [
    ("tools/call", {"name": "roots", "inputResponses": {"roots-1": ANSWERS["roots/list"]}}),
    ("prompts/get", {"name": "topic", "arguments": {"subject": "x"}}),
    ("completion/complete", {"ref": {"type": "ref/resource", "uri": "test://item/{x}"},
                             "argument": {"name": "x", "value": ""}}),
]


@pytest.mark.spec(f"{CACHING}#cacheable-results")
@pytest.mark.spec(f"{CACHING}#cacheable-model")
@pytest.mark.spec("2026-07-28/basic/index#result-responses")
@pytest.mark.spec("2026-07-28/basic/index#_meta")
@pytest.mark.parametrize(("method", "params"), CACHEABLE + NOT_CACHEABLE)
@pytest.mark.parametrize("hints", [None, (60_000, "public")])
async def test_every_result_has_result_type_server_info_and_hints_where_cacheable(
        method: str, params: JSONObject, hints: tuple[int, str] | None) -> None:
    server, _runs = _server(**({} if hints is None else {"cache_ttl_ms": hints[0], "cache_scope": hints[1]}))
    async with _stateless(server, capabilities={"roots": {}, "elicitation": {}}) as client:
        response = await client.request_raw(method, client.with_meta(params))
    assert "result" in response, response
    result = response["result"]
    assert result["resultType"] == "complete"
    assert result["_meta"] == {META_SERVER_INFO: SERVER_INFO}
    if (method, params) in CACHEABLE:
        ttl, scope = hints or (0, "private")
        assert (result["ttlMs"], result["cacheScope"]) == (ttl, scope)
    else:
        assert not {"ttlMs", "cacheScope"} & result.keys(), result


@pytest.mark.spec(f"{CACHING}#cacheable-model")
async def test_a_resource_sets_its_own_caching_hints() -> None:
    server, _runs = _server(cache_ttl_ms=1, cache_scope="private")
    async with _stateless(server) as client:
        result = await client.read_resource("test://cached")
    assert (result["ttlMs"], result["cacheScope"]) == (5000, "public")


@pytest.mark.spec(f"{CACHING}#interaction-with-pagination")
async def test_every_page_carries_the_same_caching_hints() -> None:
    server, _runs = _server(page_size=2, cache_ttl_ms=1000, cache_scope="public")
    async with _stateless(server) as client:
        pages: list[JSONObject] = []
        cursor: str | None = None
        while True:
            page = await client.request("tools/list", {"cursor": cursor} if cursor else {})
            pages.append(page)
            cursor = page.get("nextCursor")
            if not cursor:
                break
    assert len(pages) > 2
    assert {(p["resultType"], p["ttlMs"], p["cacheScope"]) for p in pages} == {("complete", 1000, "public")}
    assert all(p["_meta"] == {META_SERVER_INFO: SERVER_INFO} for p in pages)


# -- subscriptions/listen ----------------------------------------------------------------------------------


async def _notification(client: Client, method: str, count: int = 1) -> list[JSONObject]:
    return await asyncio.wait_for(client.wait_for_notification(method, count), BOUND)


@pytest.mark.spec(f"{SUBSCRIPTIONS}#acknowledgment")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#notification-filter")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#receiving-notifications")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#graceful-closure")
async def test_listen_acknowledges_filters_and_ends_tagged() -> None:
    server = MCPServer("stateless", "3.1", title="Stateless")
    server.add_tool(Tool(lambda: "x", name="first"))
    server.resource("test://a")(lambda: "a")
    server.resource("test://b")(lambda: "b")  # no prompts: prompt changes cannot be honoured
    async with _stateless(server) as client:
        listen = asyncio.create_task(client.request_raw("subscriptions/listen", client.with_meta({"notifications": {
            "toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": False,
            "resourceSubscriptions": ["test://a"]}}), id="sub"))
        (ack,) = await _notification(client, "notifications/subscriptions/acknowledged")
        assert ack["params"] == {"_meta": {META_SUBSCRIPTION: "sub"},
                                 "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["test://a"]}}
        assert client.notifications == [ack]  # the acknowledgment comes first

        # what was not asked for (or not honoured) is not sent; each stream keeps its order, so anything
        # forwarded from the first three events would arrive before the two that are wanted
        server.resource_updated("test://b")
        server.add_prompt(Prompt(lambda: "p", name="late_prompt"))
        server.resources.add(server.resources.static["test://b"])  # resources/list_changed: declined
        server.resource_updated("test://a")
        server.add_tool(Tool(lambda: "y", name="second"))
        await _notification(client, "notifications/tools/list_changed")
        assert client.notifications[1:] == [
            {"jsonrpc": "2.0", "method": "notifications/resources/updated",
             "params": {"uri": "test://a", "_meta": {META_SUBSCRIPTION: "sub"}}},
            {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
             "params": {"_meta": {META_SUBSCRIPTION: "sub"}}},
        ]
        assert not listen.done()

        # the server ends every stream (shutting down): the listen request is answered, tagged
        server.bus.end_all()
        response = await asyncio.wait_for(listen, BOUND)
    assert response == {"jsonrpc": "2.0", "id": "sub", "result": {
        "resultType": "complete", "_meta": {META_SUBSCRIPTION: "sub", META_SERVER_INFO: SERVER_INFO}}}


@pytest.mark.spec(f"{SUBSCRIPTIONS}#multiple-concurrent-subscriptions")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#receiving-notifications")
async def test_concurrent_listens_are_told_apart_by_their_ids() -> None:
    server, _runs = _server()
    async with _stateless(server) as client:
        tools = asyncio.create_task(client.request_raw("subscriptions/listen", client.with_meta(
            {"notifications": {"toolsListChanged": True}}), id=1))
        prompts = asyncio.create_task(client.request_raw("subscriptions/listen", client.with_meta(
            {"notifications": {"promptsListChanged": True}}), id="p"))
        acks = await _notification(client, "notifications/subscriptions/acknowledged", 2)
        assert sorted(str(a["params"]["_meta"][META_SUBSCRIPTION]) for a in acks) == ["1", "p"]
        server.add_prompt(Prompt(lambda: "p", name="another"))
        server.add_tool(Tool(lambda: "t", name="another"))
        (tool_note,) = await _notification(client, "notifications/tools/list_changed")
        (prompt_note,) = await _notification(client, "notifications/prompts/list_changed")
        assert tool_note["params"]["_meta"] == {META_SUBSCRIPTION: 1}
        assert prompt_note["params"]["_meta"] == {META_SUBSCRIPTION: "p"}
        server.bus.end_all()
        ended = await asyncio.wait_for(asyncio.gather(tools, prompts), BOUND)
    assert [r["result"]["_meta"][META_SUBSCRIPTION] for r in ended] == [1, "p"]
    assert len(client.notifications) == 4


@pytest.mark.spec("2026-07-28/basic/index#_meta")
async def test_listen_needs_the_per_request_meta() -> None:
    server, _runs = _server()
    async with _stateless(server) as client:
        response = await client.request_raw("subscriptions/listen", {
            "_meta": {"io.modelcontextprotocol/protocolVersion": VERSION}, "notifications": {}})
    assert _error(response)["code"] == INVALID_PARAMS
    assert client.notifications == []
