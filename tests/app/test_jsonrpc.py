"""JSON-RPC framing: decoding, classification and encoding of single messages and batches."""

from typing import Any

import pytest

from wiremcp import jsonrpc
from wiremcp.errors import INVALID_REQUEST, PARSE_ERROR


def _reply(message: object) -> dict[str, Any]:
    assert isinstance(message, jsonrpc.Invalid)
    assert message.reply is not None
    return message.reply


@pytest.mark.spec("2025-11-25/basic/index#requests")
def test_request_is_classified() -> None:
    msg = jsonrpc.decode(b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"cursor": "x"}}')
    assert msg == jsonrpc.Request(7, "tools/list", {"cursor": "x"})


@pytest.mark.spec("2025-11-25/basic/index#requests")
def test_string_ids_are_kept_as_strings() -> None:
    assert jsonrpc.decode('{"jsonrpc": "2.0", "id": "abc", "method": "ping"}') == jsonrpc.Request("abc", "ping", {})


@pytest.mark.parametrize("params", ["", ', "params": null'])
def test_missing_or_null_params_become_an_empty_object(params: str) -> None:
    msg = jsonrpc.decode('{"jsonrpc": "2.0", "id": 1, "method": "ping"' + params + "}")
    assert msg == jsonrpc.Request(1, "ping", {})


@pytest.mark.spec("2025-11-25/basic/index#notifications")
def test_notification_has_no_id() -> None:
    msg = jsonrpc.decode(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    assert msg == jsonrpc.Notification("notifications/initialized", {})


@pytest.mark.spec("2025-11-25/basic/index#result-responses")
def test_result_response() -> None:
    msg = jsonrpc.decode(b'{"jsonrpc": "2.0", "id": 3, "result": {"roots": []}}')
    assert msg == jsonrpc.Response(3, {"roots": []}, None)


@pytest.mark.spec("2025-11-25/basic/index#error-responses")
def test_error_response() -> None:
    msg = jsonrpc.decode(b'{"jsonrpc": "2.0", "id": "s1", "error": {"code": -1, "message": "no"}}')
    assert msg == jsonrpc.Response("s1", None, {"code": -1, "message": "no"})


@pytest.mark.spec("2025-11-25/basic/index#error-responses")
@pytest.mark.parametrize("frame", [b"{not json", b"", b'{"jsonrpc": "2.0", "id": 1', b"\xff\xfe"])
def test_invalid_json_is_a_parse_error_with_null_id(frame: bytes) -> None:
    reply = _reply(jsonrpc.decode(frame))
    assert reply["jsonrpc"] == "2.0"
    assert reply["id"] is None
    assert reply["error"]["code"] == PARSE_ERROR
    assert reply["error"]["message"]


@pytest.mark.spec("2025-11-25/basic/index#requests")
@pytest.mark.parametrize(
    ("obj", "reply_id"),
    [
        (42, None),
        ("ping", None),
        ({"id": 1, "method": "ping"}, 1),  # no "jsonrpc"
        ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, 1),
        ({"jsonrpc": "2.0", "id": 1}, 1),  # neither method nor result/error
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, 1),
        ({"jsonrpc": "2.0", "id": 1, "method": ""}, 1),
        ({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1, 2]}, 1),  # positional params
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),  # ids MUST NOT be null
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, None),
    ],
)
def test_invalid_requests_are_answered_with_invalid_request(obj: Any, reply_id: Any) -> None:
    reply = _reply(jsonrpc.classify(obj))
    assert reply["id"] == reply_id
    assert reply["error"]["code"] == INVALID_REQUEST
    assert isinstance(reply["error"]["message"], str)


@pytest.mark.spec("2025-11-25/basic/index#notifications")
def test_a_malformed_notification_gets_no_reply() -> None:
    msg = jsonrpc.classify({"jsonrpc": "2.0", "method": "notifications/x", "params": [1]})
    assert msg == jsonrpc.Invalid(None)


@pytest.mark.parametrize(
    "obj",
    [
        {"jsonrpc": "2.0", "id": None, "result": {}},  # no id to match
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}},  # both
        {"jsonrpc": "2.0", "id": 1, "result": None},  # neither
        {"jsonrpc": "2.0", "id": 1, "result": [1]},  # not an object
        {"jsonrpc": "2.0", "id": 1, "error": "boom"},
    ],
)
def test_malformed_responses_are_dropped_silently(obj: Any) -> None:
    assert jsonrpc.classify(obj) == jsonrpc.Invalid(None)


def test_batch_is_decoded_item_by_item() -> None:
    decoded = jsonrpc.decode(
        b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"},'
        b' {"jsonrpc": "2.0", "method": "notifications/x"},'
        b' {"jsonrpc": "2.0", "id": 9, "result": {}},'
        b" 17]"
    )
    assert isinstance(decoded, list)
    assert decoded[0] == jsonrpc.Request(1, "ping", {})
    assert decoded[1] == jsonrpc.Notification("notifications/x", {})
    assert decoded[2] == jsonrpc.Response(9, {}, None)
    assert _reply(decoded[3])["error"]["code"] == INVALID_REQUEST


def test_empty_batch_is_an_invalid_request() -> None:
    reply = _reply(jsonrpc.decode(b"[]"))
    assert reply["id"] is None
    assert reply["error"]["code"] == INVALID_REQUEST


def test_builders_produce_wire_shapes() -> None:
    assert jsonrpc.result(1, {}) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert jsonrpc.error(2, -32602, "bad") == {"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "bad"}}
    assert jsonrpc.error(None, -32002, "gone", {"uri": "x://y"})["error"]["data"] == {"uri": "x://y"}
    assert jsonrpc.request(5, "roots/list", None) == {"jsonrpc": "2.0", "id": 5, "method": "roots/list"}
    assert jsonrpc.request(5, "m", {"a": 1})["params"] == {"a": 1}
    assert jsonrpc.notification("notifications/x", None) == {"jsonrpc": "2.0", "method": "notifications/x"}
    assert jsonrpc.notification("n", {"b": 2})["params"] == {"b": 2}


def test_dumps_and_loads_round_trip() -> None:
    message = jsonrpc.request("r", "tools/call", {"name": "é", "arguments": {"n": [1, 2.5, None, True]}})
    assert jsonrpc.loads(jsonrpc.dumps(message)) == message
    assert jsonrpc.decode(jsonrpc.dumps(message)) == jsonrpc.Request("r", "tools/call", message["params"])
