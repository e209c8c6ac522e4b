"""The stateless era (2026-07-28) on stdio, driven through a real ``wiremcp stdio`` process.

What a wire fixture cannot express: echoing the opaque ``requestState`` of one round into
the next, and ``subscriptions/listen`` streams, whose notifications interleave with other
answers. Every read has a timeout, which is a failure bound, not a measurement; absence is
proven by ordering (a later message on the same stream), never by waiting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support.stdio import EXIT_BOUND, INIT_PARAMS, Spawn, StdioProcess, parse_wire_line
from wiremcp.protocol import (
    META_CAPABILITIES,
    META_CLIENT_INFO,
    META_SERVER_INFO,
    META_SUBSCRIPTION,
    META_VERSION,
)
from wiremcp.types import JSONObject

EVERYTHING = "examples.everything:server"
VERSION = "2026-07-28"
SERVER_INFO = {"name": "wiremcp-everything", "version": "1.0.0", "title": "wiremcp everything"}
ELICITATION: JSONObject = {"elicitation": {"form": {}}}

MRTR = "2026-07-28/basic/patterns/mrtr"
SUBSCRIPTIONS = "2026-07-28/basic/patterns/subscriptions"
STDIO = "2026-07-28/basic/transports/stdio"


def _meta(capabilities: JSONObject | None = None) -> JSONObject:
    """The per-request fields of the stateless era."""
    return {META_VERSION: VERSION, META_CAPABILITIES: capabilities or {},
            META_CLIENT_INFO: {"name": "test_stdio_stateless", "version": "0"}}


def _is_request(message: JSONObject) -> bool:
    return "method" in message and "id" in message


class Stateless:
    """A stateless-era client on one stdio process. It records every message the server writes and
    fails on the first JSON-RPC request: the server must never send one in this era."""

    def __init__(self, proc: StdioProcess) -> None:
        self.proc = proc
        self.seen: list[JSONObject] = []

    async def recv(self) -> JSONObject:
        message = await self.proc.recv()
        assert isinstance(message, dict), f"expected one message, got {message!r}"
        assert not _is_request(message), f"the server wrote a request in the stateless era: {message}"
        self.seen.append(message)
        return message

    async def send(self, rid: int | str, method: str, params: JSONObject | None = None, *,
                   capabilities: JSONObject | None = None) -> None:
        params = dict(params or {})
        params["_meta"] = {**_meta(capabilities), **params.get("_meta", {})}
        await self.proc.request(rid, method, params)

    async def response(self, rid: int | str) -> JSONObject:
        """The response to ``rid``; notifications before it are recorded (in ``seen``) and skipped."""
        while True:
            message = await self.recv()
            if "method" not in message:
                assert message.get("id") == rid, f"expected the response to {rid!r}, got {message}"
                return message

    async def call(self, rid: int | str, name: str, arguments: JSONObject | None = None, *,
                   capabilities: JSONObject | None = None, **params: Any) -> JSONObject:
        await self.send(rid, "tools/call", {"name": name, "arguments": arguments or {}, **params},
                        capabilities=capabilities)
        return await self.response(rid)

    async def until(self, done: Callable[[list[JSONObject]], bool]) -> list[JSONObject]:
        """Read until ``done`` holds for the messages read by this call; return them."""
        got: list[JSONObject] = []
        while not done(got):
            got.append(await self.recv())
        return got

    async def finish(self) -> list[JSONObject]:
        """Close stdin: every remaining line up to EOF (none may be a request), and a clean exit."""
        await self.proc.close_stdin()
        rest = [parse_wire_line(line) for line in await self.proc.stdout_to_eof()]
        for message in rest:
            assert isinstance(message, dict), message
            assert not _is_request(message), f"the server wrote a request in the stateless era: {message}"
        assert await self.proc.wait_exit() == 0
        return rest


async def _start(spawn: Spawn, server: str = EVERYTHING, *, debug: bool = False) -> Stateless:
    """``debug``: asyncio debug mode, where touching the event loop from another thread raises (the
    trigger tools are sync: they run on worker threads and publish their changes from there)."""
    return Stateless(await spawn(server, env={"PYTHONASYNCIODEBUG": "1"} if debug else None))


def _result(response: JSONObject) -> JSONObject:
    assert "result" in response, response
    result: JSONObject = response["result"]
    return result


def _text(response: JSONObject) -> str:
    result = _result(response)
    assert result["resultType"] == "complete", result
    text: str = result["content"][0]["text"]
    return text


def _input_required(response: JSONObject) -> tuple[JSONObject, str]:
    """The ``inputRequests`` and the sealed ``requestState`` of an InputRequiredResult."""
    result = _result(response)
    assert result["resultType"] == "input_required", result
    assert not {"ttlMs", "cacheScope"} & result.keys(), "input_required results are not cacheable"
    assert result["_meta"][META_SERVER_INFO] == SERVER_INFO
    state = result["requestState"]
    assert isinstance(state, str)
    assert state
    requests: JSONObject = result["inputRequests"]
    return requests, state


def _tagged(message: JSONObject, method: str, subscription: int | str) -> bool:
    params = message.get("params")
    return (message.get("method") == method and isinstance(params, dict)
            and params.get("_meta", {}).get(META_SUBSCRIPTION) == subscription)


def _subscription_of(message: JSONObject) -> Any:
    """The subscriptionId a notification or response carries, if any."""
    body = message.get("params", message.get("result"))
    meta = body.get("_meta") if isinstance(body, dict) else None
    return meta.get(META_SUBSCRIPTION) if isinstance(meta, dict) else None


def _count(messages: list[JSONObject], method: str, subscription: int | str) -> int:
    return sum(_tagged(m, method, subscription) for m in messages)


def _answered(messages: list[JSONObject], rid: int | str) -> bool:
    return any(m.get("id") == rid and "method" not in m for m in messages)


# -- multi round-trip requests ---------------------------------------------------------------------

@pytest.mark.spec(f"{MRTR}#basic-workflow")
@pytest.mark.spec(f"{MRTR}#client-requirements-basic-workflow")
@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
@pytest.mark.spec(f"{STDIO}#receiving-messages")
async def test_input_required_round_trip_echoes_the_opaque_request_state(spawn: Spawn) -> None:
    server = await _start(spawn)
    requests, state = _input_required(await server.call(1, "test_input_required_result_request_state",
                                                        capabilities=ELICITATION))
    assert list(requests) == ["confirm"]
    assert requests["confirm"]["method"] == "elicitation/create"
    assert requests["confirm"]["params"]["mode"] == "form"
    answers = {"confirm": {"action": "accept", "content": {"ok": True}}}

    # the retry is a new request (new id) with the answers and the exact state echoed
    done = await server.call(2, "test_input_required_result_request_state", capabilities=ELICITATION,
                             inputResponses=answers, requestState=state)
    assert _text(done) == "state-ok: confirmation received"
    assert _result(done)["_meta"] == {META_SERVER_INFO: SERVER_INFO}

    # without the state the handler's own state does not come back, so it asks again
    _input_required(await server.call(3, "test_input_required_result_request_state", capabilities=ELICITATION,
                                      inputResponses=answers))

    # a state is attacker-controlled: altered, or presented on another request, it is refused
    middle = len(state) // 2  # a character that carries six bits of the sealed bytes
    tampered = state[:middle] + ("A" if state[middle] != "A" else "B") + state[middle + 1:]
    refused = await server.call(4, "test_input_required_result_request_state", capabilities=ELICITATION,
                                inputResponses=answers, requestState=tampered)
    assert refused["error"]["code"] == -32602, refused
    elsewhere = await server.call(5, "test_input_required_result_tampered_state", capabilities=ELICITATION,
                                  inputResponses=answers, requestState=state)
    assert elsewhere["error"]["code"] == -32602, elsewhere
    assert "another request" in elsewhere["error"]["message"]
    await server.finish()


@pytest.mark.spec(f"{MRTR}#basic-workflow")
@pytest.mark.spec(f"{MRTR}#server-requirements-basic-workflow")
async def test_ctx_elicit_replays_across_rounds_with_earlier_answers_from_the_state(spawn: Spawn) -> None:
    """Each ``ctx.elicit`` is one round; the third round brings only the newest answer."""
    server = await _start(spawn)
    name = "test_input_required_result_multi_round"
    first, state1 = _input_required(await server.call(1, name, capabilities=ELICITATION))
    assert list(first) == ["elicitation-1"]
    assert first["elicitation-1"]["params"]["message"] == "Step 1: What is your name?"

    second, state2 = _input_required(await server.call(
        2, name, capabilities=ELICITATION, requestState=state1,
        inputResponses={"elicitation-1": {"action": "accept", "content": {"name": "Ada"}}}))
    assert list(second) == ["elicitation-2"]
    assert second["elicitation-2"]["params"]["message"] == "Step 2: What is your favorite color?"
    assert state2 != state1

    done = await server.call(3, name, capabilities=ELICITATION, requestState=state2,
                             inputResponses={"elicitation-2": {"action": "accept", "content": {"color": "teal"}}})
    assert _text(done) == "Ada likes teal."
    await server.finish()


@pytest.mark.spec(f"{STDIO}#receiving-messages")
@pytest.mark.spec("2026-07-28/basic/patterns/mrtr#multi-round-trip-requests")
async def test_the_server_never_writes_a_request_in_the_stateless_era(spawn: Spawn) -> None:
    """Handlers that ask the client (high level and low level, every kind of input) get InputRequiredResults."""
    server = await _start(spawn)
    everything: JSONObject = {"elicitation": {"form": {}}, "sampling": {}, "roots": {}}
    asks = [
        ("test_elicitation", {"message": "Who are you?"}, "elicitation/create"),
        ("test_sampling", {"prompt": "Hi"}, "sampling/createMessage"),
        ("test_input_required_result_list_roots", {}, "roots/list"),
        ("test_input_required_result_sampling", {}, "sampling/createMessage"),
    ]
    for rid, (tool, arguments, method) in enumerate(asks, start=1):
        requests, _state = _input_required(await server.call(rid, tool, arguments, capabilities=everything))
        assert [r["method"] for r in requests.values()] == [method], tool
    # progress before the input point is a notification related to the request; the question is in the result
    await server.send(9, "tools/call", {"name": "test_streaming_elicitation", "arguments": {},
                                        "_meta": {"progressToken": "p9"}}, capabilities=everything)
    progress = await server.recv()
    assert progress == {"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": "p9", "progress": 0, "total": 2}}
    requests, _state = _input_required(await server.response(9))
    assert [r["method"] for r in requests.values()] == ["elicitation/create"]
    await server.finish()
    assert not any(_is_request(m) for m in server.seen)


@pytest.mark.spec("2026-07-28/basic/versioning#backward-compatibility-with-initialization-based-versions")
@pytest.mark.spec(f"{STDIO}#receiving-messages")
@pytest.mark.spec("2026-07-28/basic/index#statelessness")
async def test_each_era_asks_for_input_its_own_way_on_one_process(spawn: Spawn) -> None:
    """After initialize (which declared elicitation) a stateless request still declares its own capabilities
    and gets its questions in the result; the handshake-era call gets a real elicitation/create request."""
    proc = await spawn(EVERYTHING)
    await proc.request(0, "initialize", {**INIT_PARAMS, "capabilities": {"elicitation": {}}})
    assert _result(await proc.response(0))["protocolVersion"] == "2025-11-25"
    await proc.notify("notifications/initialized")
    server = Stateless(proc)

    missing = await server.call(1, "test_input_required_result_multi_round")  # _meta declares nothing
    assert missing["error"]["code"] == -32021, missing
    assert missing["error"]["data"] == {"requiredCapabilities": {"elicitation": {}}}
    requests, _state = _input_required(await server.call(2, "test_input_required_result_multi_round",
                                                         capabilities=ELICITATION))
    assert list(requests) == ["elicitation-1"]

    # the handshake era on the same process: the server asks with a request of its own
    await proc.call_tool(3, "test_elicitation", {"message": "Who are you?"})
    asked = await proc.recv()
    assert asked["method"] == "elicitation/create", asked
    assert "id" in asked, asked
    await proc.send({"jsonrpc": "2.0", "id": asked["id"],
                     "result": {"action": "accept", "content": {"response": "ada"}}})
    answer = await proc.response(3)
    assert answer["result"] == {"content": [{"type": "text", "text": "User response: action=accept, response=ada"}]}
    await server.finish()


# -- subscriptions/listen ----------------------------------------------------------------------------

@pytest.mark.spec(f"{SUBSCRIPTIONS}#acknowledgment")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#notification-filter")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#receiving-notifications")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#multiple-concurrent-subscriptions")
@pytest.mark.spec(f"{STDIO}#receiving-messages")
async def test_listen_acknowledges_first_then_forwards_tagged_changes(spawn: Spawn) -> None:
    server = await _start(spawn, debug=True)
    await server.send("tools-sub", "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    ack = await server.recv()
    assert ack == {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                   "params": {"_meta": {META_SUBSCRIPTION: "tools-sub"}, "notifications": {"toolsListChanged": True}}}
    # a second, concurrent subscription, with an integer id, for prompts only
    await server.send(7, "subscriptions/listen", {"notifications": {"promptsListChanged": True,
                                                                    "toolsListChanged": False}})
    ack = await server.recv()
    assert ack["method"] == "notifications/subscriptions/acknowledged", ack
    assert ack["params"] == {"_meta": {META_SUBSCRIPTION: 7}, "notifications": {"promptsListChanged": True}}

    # while both are open, other requests are answered (before any initialize, too)
    await server.proc.request(1, "ping")
    assert await server.response(1) == {"jsonrpc": "2.0", "id": 1, "result": {}}

    # a prompt change reaches only subscription 7
    await server.send(2, "tools/call", {"name": "test_trigger_prompt_change", "arguments": {}})
    got = await server.until(lambda m: _answered(m, 2) and _count(m, "notifications/prompts/list_changed", 7) == 2)
    assert _text(next(m for m in got if m.get("id") == 2)) == "prompt list changed"
    # a tool change reaches only "tools-sub"; each queue is in order, so had "tools-sub" taken the prompt
    # changes they would have come before these
    await server.send(3, "tools/call", {"name": "test_trigger_tool_change", "arguments": {}})
    got += await server.until(lambda m: _answered(m, 3)
                              and _count(m, "notifications/tools/list_changed", "tools-sub") == 2)
    notes = [m for m in got if "id" not in m]
    assert len(notes) == 4, notes  # nothing untagged, nothing twice
    for note in notes:
        assert set(note["params"]) == {"_meta"}, note
    assert _count(got, "notifications/prompts/list_changed", "tools-sub") == 0
    assert _count(got, "notifications/tools/list_changed", 7) == 0

    # stdin EOF: the server ends both streams gracefully, each response tagged with its subscription
    rest = await server.finish()
    assert sorted(rest, key=lambda m: str(m["id"])) == [
        {"jsonrpc": "2.0", "id": 7, "result": {
            "resultType": "complete", "_meta": {META_SUBSCRIPTION: 7, META_SERVER_INFO: SERVER_INFO}}},
        {"jsonrpc": "2.0", "id": "tools-sub", "result": {
            "resultType": "complete", "_meta": {META_SUBSCRIPTION: "tools-sub", META_SERVER_INFO: SERVER_INFO}}},
    ]


@pytest.mark.spec(f"{SUBSCRIPTIONS}#cancellation")
@pytest.mark.spec(f"{STDIO}#cancellation")
@pytest.mark.spec("2026-07-28/basic/patterns/cancellation#behavior-requirements")
async def test_cancelled_listen_ends_without_a_response(spawn: Spawn) -> None:
    server = await _start(spawn, debug=True)
    listen = {"notifications": {"toolsListChanged": True}}
    await server.send("a", "subscriptions/listen", listen)
    await server.send("b", "subscriptions/listen", listen)
    acks = await server.until(lambda m: len(m) == 2)
    assert {a["params"]["_meta"][META_SUBSCRIPTION] for a in acks} == {"a", "b"}
    assert all(a["method"] == "notifications/subscriptions/acknowledged" for a in acks)

    await server.proc.notify("notifications/cancelled", {"requestId": "a", "reason": "done listening"})
    await server.send(1, "tools/call", {"name": "test_trigger_tool_change", "arguments": {}})
    got = await server.until(lambda m: _answered(m, 1) and _count(m, "notifications/tools/list_changed", "b") == 2)
    assert _count(got, "notifications/tools/list_changed", "a") == 0
    # nothing more for "a", not even at the end, when the other stream ends gracefully
    rest = await server.finish()
    assert [m["id"] for m in rest] == ["b"], rest
    assert [m for m in got + rest if m.get("id") == "a" or _subscription_of(m) == "a"] == []


@pytest.mark.spec(f"{STDIO}#shutdown")
@pytest.mark.spec(f"{SUBSCRIPTIONS}#graceful-closure")
async def test_stdin_eof_with_a_listen_open_exits_promptly(spawn: Spawn) -> None:
    server = await _start(spawn)
    await server.send(1, "subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    ack = await server.recv()
    assert ack["method"] == "notifications/subscriptions/acknowledged", ack
    await server.proc.close_stdin()
    assert await server.proc.wait_exit(EXIT_BOUND) == 0
    rest = [parse_wire_line(line) for line in await server.proc.stdout_to_eof()]
    assert rest == [{"jsonrpc": "2.0", "id": 1, "result": {
        "resultType": "complete", "_meta": {META_SUBSCRIPTION: 1, META_SERVER_INFO: SERVER_INFO}}}]
