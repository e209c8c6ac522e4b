"""``wiremcp.asking``: the one capability rule for asking the client for input (elicitation, sampling,
roots), and the ways a request asks: ``ClientRequests`` (handshake era: a request to the client on a
``ServerSession``), ``InputRounds`` (stateless era: the answer this retry brought, else ``InputRequired``)
and ``NoChannel``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from wiremcp import ClientError, Context, InputRequired, MCPServer, MissingClientCapability, jsonrpc
from wiremcp.asking import ClientRequests, InputRounds, NoChannel, declared, require_input_capability
from wiremcp.errors import INTERNAL_ERROR, INVALID_PARAMS, MISSING_CLIENT_CAPABILITY, MCPError
from wiremcp.input_required import InputExchange
from wiremcp.session import ServerSession
from wiremcp.state import SessionState
from wiremcp.types import JSONObject

ELICITATION = "2026-07-28/client/elicitation#capabilities"
SAMPLING = "2026-07-28/client/sampling#capabilities"
ROOTS = "2026-07-28/client/roots#capabilities"
MRTR = "2026-07-28/basic/patterns/mrtr"

FORM: JSONObject = {"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}
URL: JSONObject = {"mode": "url", "message": "Sign in", "url": "https://example.com/x", "elicitationId": "e-1"}
MESSAGES: JSONObject = {"messages": [], "maxTokens": 10}


def missing(method: str, params: JSONObject | None, capabilities: JSONObject) -> MissingClientCapability:
    with pytest.raises(MissingClientCapability) as raised:
        require_input_capability(method, params, capabilities)
    assert raised.value.code == MISSING_CLIENT_CAPABILITY
    return raised.value


# -- declared ---------------------------------------------------------------------------------------------
def test_declared_returns_the_declared_capability() -> None:
    capabilities: JSONObject = {"sampling": {"tools": {}}, "roots": {"listChanged": True}}
    assert declared(capabilities, "roots") == {"listChanged": True}
    assert declared(capabilities, "sampling", "tools") == {"tools": {}}


@pytest.mark.parametrize(("capabilities", "capability", "sub", "required", "name"), [
    ({}, "roots", None, {"roots": {}}, "roots"),
    ({"roots": True}, "roots", None, {"roots": {}}, "roots"),
    ({"sampling": {}}, "sampling", "tools", {"sampling": {"tools": {}}}, "sampling.tools"),
    ({"sampling": {"tools": True}}, "sampling", "tools", {"sampling": {"tools": {}}}, "sampling.tools"),
    ({}, "sampling", "context", {"sampling": {"context": {}}}, "sampling.context"),
], ids=["absent", "not-an-object", "sub-absent", "sub-not-an-object", "both-absent"])
def test_declared_refuses_what_was_not_declared(capabilities: JSONObject, capability: str, sub: str | None,
                                                required: JSONObject, name: str) -> None:
    with pytest.raises(MissingClientCapability) as raised:
        declared(capabilities, capability, sub)
    assert raised.value.data == {"requiredCapabilities": required}
    assert raised.value.capability == name
    assert raised.value.message == f"Missing required client capability: {name}"


# -- require_input_capability -----------------------------------------------------------------------------
@pytest.mark.spec(ELICITATION)
@pytest.mark.parametrize(("params", "capabilities"), [
    (FORM, {"elicitation": {}}),
    (FORM, {"elicitation": {"form": {}}}),
    (FORM, {"elicitation": {"form": {}, "url": {}}}),
    ({"mode": "form", **FORM}, {"elicitation": {"form": {}}}),
    (URL, {"elicitation": {"url": {}}}),
    (URL, {"elicitation": {"form": {}, "url": {}}}),
], ids=["form-empty-object", "form", "form-of-both", "explicit-form", "url", "url-of-both"])
def test_an_elicitation_the_client_declared_is_allowed(params: JSONObject, capabilities: JSONObject) -> None:
    require_input_capability("elicitation/create", params, capabilities)


@pytest.mark.spec(ELICITATION)
@pytest.mark.parametrize(("params", "capabilities", "required"), [
    (FORM, {}, {"elicitation": {}}),
    (URL, {}, {"elicitation": {"url": {}}}),
    (URL, {"elicitation": {}}, {"elicitation": {"url": {}}}),
    (URL, {"elicitation": {"form": {}}}, {"elicitation": {"url": {}}}),
    (FORM, {"elicitation": {"url": {}}}, {"elicitation": {"form": {}}}),
    ({"mode": "form", **FORM}, {"elicitation": {"url": {}}}, {"elicitation": {"form": {}}}),
    (None, {"sampling": {}}, {"elicitation": {}}),
], ids=["form-undeclared", "url-undeclared", "url-of-empty-object", "url-of-form-only", "form-of-url-only",
        "explicit-form-of-url-only", "no-params"])
def test_an_elicitation_the_client_did_not_declare_is_refused(params: JSONObject | None, capabilities: JSONObject,
                                                             required: JSONObject) -> None:
    error = missing("elicitation/create", params, capabilities)
    assert error.data == {"requiredCapabilities": required}


@pytest.mark.spec(SAMPLING)
@pytest.mark.parametrize(("params", "capabilities"), [
    (MESSAGES, {"sampling": {}}),
    ({**MESSAGES, "tools": [{"name": "t"}]}, {"sampling": {"tools": {}}}),
    ({**MESSAGES, "toolChoice": {"mode": "auto"}}, {"sampling": {"tools": {}}}),
    ({**MESSAGES, "includeContext": "none"}, {"sampling": {}}),
    ({**MESSAGES, "includeContext": "thisServer"}, {"sampling": {"context": {}}}),
    ({**MESSAGES, "tools": [], "includeContext": "allServers"}, {"sampling": {"tools": {}, "context": {}}}),
    (None, {"sampling": {}}),
], ids=["basic", "tools", "tool-choice", "no-context", "this-server", "tools-and-context", "no-params"])
def test_a_sampling_request_the_client_declared_is_allowed(params: JSONObject | None,
                                                           capabilities: JSONObject) -> None:
    require_input_capability("sampling/createMessage", params, capabilities)


@pytest.mark.spec(SAMPLING)
@pytest.mark.parametrize(("params", "capabilities", "required"), [
    (MESSAGES, {}, {"sampling": {}}),
    (MESSAGES, {"elicitation": {}}, {"sampling": {}}),
    ({**MESSAGES, "tools": [{"name": "t"}]}, {"sampling": {}}, {"sampling": {"tools": {}}}),
    ({**MESSAGES, "toolChoice": {"mode": "auto"}}, {"sampling": {"context": {}}}, {"sampling": {"tools": {}}}),
    ({**MESSAGES, "includeContext": "thisServer"}, {"sampling": {}}, {"sampling": {"context": {}}}),
    ({**MESSAGES, "includeContext": "allServers"}, {"sampling": {"tools": {}}}, {"sampling": {"context": {}}}),
], ids=["undeclared", "other-capability", "tools", "tool-choice", "this-server", "all-servers"])
def test_a_sampling_request_the_client_did_not_declare_is_refused(params: JSONObject, capabilities: JSONObject,
                                                                 required: JSONObject) -> None:
    assert missing("sampling/createMessage", params, capabilities).data == {"requiredCapabilities": required}


@pytest.mark.spec(ROOTS)
def test_roots_need_the_roots_capability() -> None:
    require_input_capability("roots/list", None, {"roots": {}})
    require_input_capability("roots/list", {}, {"roots": {"listChanged": True}})
    assert missing("roots/list", None, {"sampling": {}}).data == {"requiredCapabilities": {"roots": {}}}


@pytest.mark.spec(f"{MRTR}#inputrequests")
@pytest.mark.parametrize("method", ["tools/list", "ping", None, 3], ids=["tools-list", "ping", "none", "a-number"])
def test_an_unknown_kind_of_input_request_is_the_servers_error(method: object) -> None:
    with pytest.raises(MCPError) as raised:
        require_input_capability(method, None, {"roots": {}, "sampling": {}, "elicitation": {}})
    assert not isinstance(raised.value, MissingClientCapability)
    assert raised.value.code == INTERNAL_ERROR
    assert raised.value.message == (f"Invalid input request method: {method!r}; one of "
                                    "['elicitation/create', 'roots/list', 'sampling/createMessage']")


# -- the ways of asking -----------------------------------------------------------------------------------
async def _discard(message: JSONObject) -> None:
    return None


def context(method: str = "tools/call", *, stateless: bool = True, session: ServerSession | None = None,
            server: MCPServer | None = None) -> Context:
    server = server or MCPServer("t")
    state = SessionState(protocol_version="2026-07-28" if stateless else "2025-11-25",
                         client_capabilities={"elicitation": {}, "roots": {}}, initialized=True, ready=True)
    return Context(server, state, 1, method, {"name": "x"}, _discard, stateless=stateless, session=session)


@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
async def test_input_rounds_asks_for_the_first_input_with_its_key() -> None:
    ctx = context()
    with pytest.raises(InputRequired) as raised:
        await InputRounds(ctx).ask("elicitation/create", FORM, None)
    assert raised.value.input_requests == {"elicitation-1": {"method": "elicitation/create", "params": FORM}}
    assert raised.value.request_state is None
    assert ctx.exchange is not None  # opened for the round


@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
async def test_input_rounds_returns_the_answer_the_retry_brought_and_asks_for_the_next() -> None:
    ctx = context()
    ctx.exchange = InputExchange(responses={"elicitation-1": {"action": "accept", "content": {"name": "Ada"}}})
    rounds = InputRounds(ctx)
    assert await rounds.ask("elicitation/create", FORM, None) == {"action": "accept", "content": {"name": "Ada"}}
    with pytest.raises(InputRequired) as raised:
        await rounds.ask("elicitation/create", {**FORM, "message": "Age?"}, None)
    assert raised.value.input_requests == {
        "elicitation-2": {"method": "elicitation/create", "params": {**FORM, "message": "Age?"}}}


@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
async def test_input_rounds_numbers_every_input_point_in_order_whatever_its_kind() -> None:
    ctx = context()
    ctx.exchange = InputExchange(answers={"elicitation-1": {"action": "decline"}},
                                 responses={"roots-2": {"roots": [{"uri": "file:///r"}]}})
    rounds = InputRounds(ctx)
    assert await rounds.ask("elicitation/create", FORM, None) == {"action": "decline"}
    assert await rounds.ask("roots/list", None, None) == {"roots": [{"uri": "file:///r"}]}
    with pytest.raises(InputRequired) as raised:
        await rounds.ask("roots/list", None, None)
    assert raised.value.input_requests == {"roots-3": {"method": "roots/list"}}  # no params: none sent


@pytest.mark.spec(f"{MRTR}#error-handling")
async def test_input_rounds_refuses_an_answer_that_is_not_an_object() -> None:
    ctx = context()
    ctx.exchange = InputExchange(responses={"elicitation-1": "accept"})
    with pytest.raises(MCPError) as raised:
        await InputRounds(ctx).ask("elicitation/create", FORM, None)
    assert raised.value.code == INVALID_PARAMS
    assert raised.value.message == "inputResponses['elicitation-1'] must be an object"


@pytest.mark.spec(f"{MRTR}#supported-requests")
@pytest.mark.parametrize("method", ["tools/call", "prompts/get", "resources/read"])
async def test_input_rounds_may_ask_during_the_input_capable_requests(method: str) -> None:
    with pytest.raises(InputRequired):
        await InputRounds(context(method)).ask("roots/list", None, None)


@pytest.mark.spec(f"{MRTR}#supported-requests")
@pytest.mark.parametrize("method", ["tools/list", "completion/complete", "server/discover"])
async def test_input_rounds_refuses_to_ask_during_any_other_request(method: str) -> None:
    ctx = context(method)
    with pytest.raises(MCPError) as raised:
        await InputRounds(ctx).ask("roots/list", None, None)
    assert raised.value.code == INTERNAL_ERROR
    assert raised.value.message == f"{method} cannot ask the client for input"
    assert ctx.exchange is None


async def test_client_requests_sends_a_request_and_returns_the_clients_answer() -> None:
    server = MCPServer("t")
    session = ServerSession(server, SessionState(initialized=True, ready=True))
    sent: list[JSONObject] = []

    async def send(message: JSONObject) -> None:
        sent.append(message)
        session.handle_response(jsonrpc.Response(message["id"], {"action": "accept", "content": {"n": 1}}, None))

    try:
        answer = await ClientRequests(session, send).ask("elicitation/create", FORM, None)
    finally:
        session.close()
    assert answer == {"action": "accept", "content": {"n": 1}}
    assert len(sent) == 1
    assert sent[0] == {"jsonrpc": "2.0", "id": sent[0]["id"], "method": "elicitation/create", "params": FORM}
    assert not session.expects(sent[0]["id"])


async def test_client_requests_raises_the_clients_error() -> None:
    server = MCPServer("t")
    session = ServerSession(server, SessionState(initialized=True, ready=True))

    async def send(message: JSONObject) -> None:
        session.handle_response(jsonrpc.Response(message["id"], None, {"code": -1, "message": "no roots here"}))

    try:
        with pytest.raises(ClientError) as raised:
            await ClientRequests(session, send).ask("roots/list", None, None)
    finally:
        session.close()
    assert raised.value.code == -1
    assert raised.value.message == "no roots here"


async def test_client_requests_waits_for_an_answer_that_comes_later() -> None:
    server = MCPServer("t")
    session = ServerSession(server, SessionState(initialized=True, ready=True))
    sent: list[JSONObject] = []
    arrived = asyncio.Event()

    async def send(message: JSONObject) -> None:
        sent.append(message)
        arrived.set()

    try:
        asking = asyncio.create_task(ClientRequests(session, send).ask("roots/list", None, None))
        await arrived.wait()
        assert sent == [{"jsonrpc": "2.0", "id": sent[0]["id"], "method": "roots/list"}]
        assert session.expects(sent[0]["id"])
        session.handle_response(jsonrpc.Response(sent[0]["id"], {"roots": []}, None))
        assert await asking == {"roots": []}
    finally:
        session.close()


async def test_no_channel_refuses_to_ask() -> None:
    with pytest.raises(MCPError) as raised:
        await NoChannel().ask("roots/list", None, None)
    assert raised.value.code == INTERNAL_ERROR
    assert raised.value.message == "this request has no channel to the client"


# -- the way a context asks -------------------------------------------------------------------------------
async def test_a_context_asks_by_its_era() -> None:
    server = MCPServer("t")
    session = ServerSession(server, SessionState(initialized=True, ready=True))
    try:
        assert isinstance(context(stateless=True).asker, InputRounds)
        assert isinstance(context(stateless=True, session=session).asker, InputRounds)
        assert isinstance(context(stateless=False, session=session, server=server).asker, ClientRequests)
        assert isinstance(context(stateless=False).asker, NoChannel)
    finally:
        session.close()


@pytest.mark.spec(ELICITATION)
async def test_a_context_checks_the_capability_before_it_asks() -> None:
    ctx = context()
    with pytest.raises(MissingClientCapability) as raised:
        await ctx.request("sampling/createMessage", MESSAGES)
    assert raised.value.data == {"requiredCapabilities": {"sampling": {}}}
    assert ctx.exchange is None  # nothing was asked


@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
async def test_a_stateless_context_asks_in_rounds() -> None:
    ctx = context()
    with pytest.raises(InputRequired) as raised:
        await ctx.list_roots()
    assert list(raised.value.input_requests) == ["roots-1"]
    answered: dict[str, Any] = {"roots-1": {"roots": [{"uri": "file:///a"}, "junk"]}}
    retry = context()
    retry.exchange = InputExchange(responses=answered)
    assert await retry.list_roots() == [{"uri": "file:///a"}]
