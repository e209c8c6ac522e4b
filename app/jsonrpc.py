"""JSON-RPC 2.0 framing: decode, classify and encode messages.

Decoding never raises past :func:`decode`: every malformed input becomes an
:class:`Invalid` carrying the error response the peer should get.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeGuard

import orjson

from wiremcp.errors import INVALID_REQUEST, PARSE_ERROR
from wiremcp.types import JSONObject, RequestId


@dataclass(slots=True)
class Request:
    id: RequestId
    method: str
    params: JSONObject


@dataclass(slots=True)
class Notification:
    method: str
    params: JSONObject


@dataclass(slots=True)
class Response:
    """A response from the client to a request the server sent."""

    id: RequestId
    result: JSONObject | None
    error: JSONObject | None


@dataclass(slots=True)
class Invalid:
    """Input that is not a usable message; ``reply`` is what to send back (if anything)."""

    reply: JSONObject | None


Message = Request | Notification | Response | Invalid


def loads(data: bytes | str) -> Any:
    return orjson.loads(data)


def dumps(message: JSONObject | list[JSONObject]) -> bytes:
    return orjson.dumps(message)


def result(id: RequestId, value: JSONObject) -> JSONObject:
    return {"jsonrpc": "2.0", "id": id, "result": value}


def error(id: RequestId | None, code: int, message: str, data: Any = None) -> JSONObject:
    err: JSONObject = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": id, "error": err}


def request(id: RequestId, method: str, params: JSONObject | None) -> JSONObject:
    msg: JSONObject = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def notification(method: str, params: JSONObject | None) -> JSONObject:
    msg: JSONObject = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    return msg


def _valid_id(value: Any) -> TypeGuard[RequestId]:
    return isinstance(value, str | int) and not isinstance(value, bool)


def classify(obj: Any) -> Message:
    """Turn one decoded JSON value into a message, or an :class:`Invalid` with its error reply."""
    if not isinstance(obj, dict):
        return Invalid(error(None, INVALID_REQUEST, "Invalid Request: a message must be a JSON object"))
    raw_id = obj.get("id")
    reply_id: RequestId | None = raw_id if _valid_id(raw_id) else None
    if obj.get("jsonrpc") != "2.0":
        return Invalid(error(reply_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"'))
    method = obj.get("method")
    if method is not None:
        if not isinstance(method, str) or not method:
            return Invalid(error(reply_id, INVALID_REQUEST, 'Invalid Request: "method" must be a string'))
        params = obj.get("params", {})
        if params is None:
            params = {}
        if not isinstance(params, dict):
            # MCP params are always objects; positional params are not part of the protocol.
            if "id" in obj and reply_id is not None:
                return Invalid(error(reply_id, INVALID_REQUEST, 'Invalid Request: "params" must be an object'))
            return Invalid(None if "id" not in obj else error(None, INVALID_REQUEST, "Invalid Request"))
        if "id" not in obj:
            return Notification(method, params)
        if reply_id is None:
            return Invalid(
                error(None, INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer')
            )
        return Request(reply_id, method, params)
    if "result" in obj or "error" in obj:
        if reply_id is None:
            # A response we cannot match to anything; nothing to answer.
            return Invalid(None)
        res = obj.get("result")
        err = obj.get("error")
        if (res is None) == (err is None) or (res is not None and not isinstance(res, dict)):
            return Invalid(None)
        if err is not None and not isinstance(err, dict):
            return Invalid(None)
        return Response(reply_id, res, err)
    return Invalid(error(reply_id, INVALID_REQUEST, 'Invalid Request: missing "method"'))


def decode(data: bytes | str) -> Message | list[Message]:
    """Decode one wire frame: a single message, or a batch (a non-empty JSON array)."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        return Invalid(error(None, PARSE_ERROR, "Parse error: the message is not valid JSON"))
    if isinstance(obj, list):
        if not obj:
            return Invalid(error(None, INVALID_REQUEST, "Invalid Request: empty batch"))
        return [classify(item) for item in obj]
    return classify(obj)
