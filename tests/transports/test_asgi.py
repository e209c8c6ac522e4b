"""``wiremcp.transports.asgi``: the ASGI helpers the HTTP endpoints share: reading a header, answering (with
a JSON body, or an HTTP error whose body is a JSON-RPC error), and reading a request body within a limit."""

from __future__ import annotations

import json
from collections.abc import Iterable

import pytest

from wiremcp.transports.asgi import (
    BodyTooLarge,
    ClientDisconnected,
    Message,
    Receive,
    Scope,
    header,
    read_body,
    respond,
    respond_error,
    respond_json,
)


class Sent:
    """An ASGI ``send`` that keeps what it is given."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def __call__(self, message: Message) -> None:
        self.messages.append(message)

    @property
    def status(self) -> int:
        status: int = self.messages[0]["status"]
        return status

    @property
    def headers(self) -> dict[bytes, bytes]:
        return dict(self.messages[0]["headers"])

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages[1:])


def receiving(messages: Iterable[Message]) -> Receive:
    pending = list(messages)

    async def receive() -> Message:
        return pending.pop(0)

    return receive


def chunk(body: bytes, more: bool) -> Message:
    return {"type": "http.request", "body": body, "more_body": more}


def test_header_is_the_first_value_of_a_lower_case_name() -> None:
    scope: Scope = {"headers": [(b"accept", b"application/json"), (b"x-tag", b"one"), (b"x-tag", b"two"),
                                (b"x-latin", "caf\xe9".encode("latin-1"))]}
    assert header(scope, b"x-tag") == "one"
    assert header(scope, b"x-latin") == "caf\xe9"
    assert header(scope, b"authorization") is None


async def test_respond_sends_the_status_the_headers_and_the_length() -> None:
    sent = Sent()
    await respond(sent, 202, headers=[(b"x-one", b"1")])
    assert sent.messages == [
        {"type": "http.response.start", "status": 202, "headers": [(b"x-one", b"1"), (b"content-length", b"0")]},
        {"type": "http.response.body", "body": b""}]
    typed = Sent()
    await respond(typed, 200, b"hello", content_type=b"text/plain")
    assert typed.headers == {b"content-type": b"text/plain", b"content-length": b"5"}
    assert typed.body == b"hello"


async def test_json_and_json_rpc_error_answers() -> None:
    sent = Sent()
    await respond_json(sent, 200, {"ok": True})
    assert (sent.status, sent.headers[b"content-type"], json.loads(sent.body)) == (200, b"application/json",
                                                                                    {"ok": True})
    refused = Sent()
    await respond_error(refused, 404, -32600, "Session not found", id=7, headers=[(b"x-why", b"gone")])
    assert refused.status == 404
    assert refused.headers[b"x-why"] == b"gone"
    assert json.loads(refused.body) == {"jsonrpc": "2.0", "id": 7,
                                        "error": {"code": -32600, "message": "Session not found"}}


async def test_a_body_is_read_whole_across_chunks() -> None:
    receive = receiving([chunk(b'{"a"', True), chunk(b"", True), chunk(b": 1}", False)])
    assert await read_body(receive, limit=8) == b'{"a": 1}'  # exactly at the limit is fine


async def test_a_body_without_more_body_is_one_chunk() -> None:
    assert await read_body(receiving([{"type": "http.request", "body": b"all"}]), limit=3) == b"all"
    assert await read_body(receiving([{"type": "http.request"}]), limit=0) == b""


async def test_a_body_over_the_limit_is_refused_as_soon_as_it_is() -> None:
    receive = receiving([chunk(b"12345", True), chunk(b"6", True)])  # one byte over
    with pytest.raises(BodyTooLarge):
        await read_body(receive, limit=5)


async def test_a_client_gone_before_its_body_arrived() -> None:
    with pytest.raises(ClientDisconnected):
        await read_body(receiving([chunk(b"half", True), {"type": "http.disconnect"}]), limit=100)


def test_header_reads_the_first_value_and_follows_replaced_headers() -> None:
    scope: dict[str, object] = {"headers": [(b"x-a", b"1"), (b"x-a", b"2"), (b"host", b"h")]}
    assert header(scope, b"x-a") == "1"  # the first of a repeated header
    assert header(scope, b"missing") is None
    scope["headers"] = [(b"x-a", b"3")]  # a middleware gave the request other headers
    assert header(scope, b"x-a") == "3"
    assert header(scope, b"host") is None
