"""How a channel to an upstream routes what the server sends besides its answers: progress by the token we sent,
anything else of a call to the one call in flight, a subscription's notifications to its listen request, a
list change to the listener wherever it came; requests nobody relays answered here. The server is a real process
that writes scripted lines on its stdout."""

from __future__ import annotations

import asyncio
import json
import sys
import textwrap
from pathlib import Path

import pytest

from wiremcp.transports.upstream import launch
from wiremcp.transports.upstream_channels import JSON, notify, reply, unrelayed

pytestmark = pytest.mark.timeout(30)

SCRIPTED = textwrap.dedent('''
    import json, sys
    for line in sys.stdin:
        message = json.loads(line)
        if "method" not in message:  # our answer to its request: echoed back as a log message
            print(json.dumps({"jsonrpc": "2.0", "method": "notifications/message",
                              "params": {"level": "info", "data": {"answered": message}}}), flush=True)
            continue
        rid, token = message["id"], message["params"].get("_meta", {}).get("progressToken")
        if message["method"] == "subscriptions/listen":
            print(json.dumps({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                              "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": rid}}}), flush=True)
            continue
        print(json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                          "params": {"progressToken": token, "progress": 1}}), flush=True)
        print(json.dumps({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}), flush=True)
        print(json.dumps({"jsonrpc": "2.0", "id": "ask", "method": "elicitation/create",
                          "params": {"message": "sure?"}}), flush=True)
        answer = json.loads(sys.stdin.readline())
        print(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"asked": answer}}), flush=True)
''')


class Recording:
    def __init__(self) -> None:
        self.heard: list[JSON] = []

    async def notified(self, message: JSON) -> None:
        self.heard.append(message)

    async def asked(self, message: JSON) -> JSON:
        self.heard.append(message)
        return {"result": {"action": "accept"}}


async def test_a_calls_progress_messages_and_requests_go_to_its_relay_and_list_changes_to_the_listener(
        tmp_path: Path) -> None:
    script = tmp_path / "scripted.py"
    script.write_text(SCRIPTED)
    heard: list[JSON] = []
    subscribed = asyncio.Event()

    def listener(message: JSON) -> None:
        heard.append(message)
        subscribed.set()

    channel = await launch([sys.executable, str(script)], listener)
    try:
        relay = Recording()
        listen = asyncio.create_task(channel.send({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
                                                   "params": {}}, {}))
        await asyncio.wait_for(subscribed.wait(), 10)  # the subscription is open: its notification came
        answer = await channel.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                     "params": {"_meta": {"progressToken": 1}}}, {}, relay)
        listen.cancel()
    finally:
        await channel.close()
    assert answer == {"jsonrpc": "2.0", "id": 1, "result": {"asked": {
        "jsonrpc": "2.0", "id": "ask", "result": {"action": "accept"}}}}
    assert [m.get("method") for m in relay.heard] == ["notifications/progress", "elicitation/create"]
    methods = [m.get("method") for m in heard]
    assert methods[0] == "notifications/tools/list_changed"  # the subscription's, to the listener
    assert "notifications/prompts/list_changed" in methods  # about no call, though it came during one


async def test_notify_sends_only_progress_and_log_messages_to_a_relay() -> None:
    relay, heard = Recording(), list[JSON]()
    for method in ("notifications/progress", "notifications/message", "notifications/resources/updated"):
        await notify(relay, heard.append, {"jsonrpc": "2.0", "method": method})
    await notify(None, heard.append, {"jsonrpc": "2.0", "method": "notifications/message"})
    assert [m["method"] for m in relay.heard] == ["notifications/progress", "notifications/message"]
    assert [m["method"] for m in heard] == ["notifications/resources/updated", "notifications/message"]


async def test_a_request_nobody_relays_is_answered_here() -> None:
    assert unrelayed({"id": 1, "method": "ping"}) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert unrelayed({"id": 2, "method": "roots/list"})["result"] == {"roots": []}
    assert unrelayed({"id": 3, "method": "sampling/createMessage"})["error"]["code"] == -32601

    class Failing(Recording):
        async def asked(self, message: JSON) -> JSON:
            raise RuntimeError("the relay's own failure, which the server never sees")

    answered = await reply(Failing(), {"id": 4, "method": "elicitation/create"})
    assert answered == {"jsonrpc": "2.0", "id": 4, "error": {"code": -32603, "message": "not answered"}}
    assert json.dumps(answered).count("never sees") == 0
