"""``ClosingConnections``: ``Connection: close`` on every response that starts while the replica leaves (the
drain's real-process test, ``test_drain.py``, shows what it is for: no kept connection closed under a request)."""

from __future__ import annotations

from typing import Any

from wiremcp.transports.asgi import Message, Receive, Scope, SendASGI
from wiremcp.transports.closing import ClosingConnections


async def keep_alive_app(scope: Scope, receive: Receive, send: SendASGI) -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain"), (b"Connection", b"keep-alive")]})
    await send({"type": "http.response.body", "body": b"ok"})


async def answer(app: ClosingConnections, kind: str = "http") -> list[Message]:
    sent: list[Message] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        sent.append(message)

    await app({"type": kind}, receive, send)
    return sent


async def test_responses_close_their_connection_only_while_the_replica_leaves() -> None:
    leaving = False
    app = ClosingConnections(keep_alive_app, lambda: leaving)
    start, body = await answer(app)
    assert (b"Connection", b"keep-alive") in start["headers"]
    assert (b"connection", b"close") not in start["headers"]

    leaving = True
    start, again = await answer(app)
    assert start["headers"] == [(b"content-type", b"text/plain"), (b"connection", b"close")]  # the app's replaced
    assert again == body == {"type": "http.response.body", "body": b"ok"}


async def test_other_scopes_pass_untouched() -> None:
    seen: list[str] = []

    async def lifespan_app(scope: Scope, receive: Receive, send: SendASGI) -> None:
        seen.append(scope["type"])

    await answer(ClosingConnections(lifespan_app, lambda: True), "lifespan")
    assert seen == ["lifespan"]
