"""``Connection: close`` on every response while the replica leaves (``wiremcp.transports.drain``).

A keep-alive connection the server closes while it is idle races a proxy that has just written a request on
it: nginx does not send a POST again once it went out, and its client gets a 502. So, from the exit signal
on, every response tells the proxy not to keep its connection: the proxy sends the next request on another
connection, to another replica, and the connections of this one end one by one, each after its answer.
"""

from __future__ import annotations

from collections.abc import Callable

from wiremcp.transports.asgi import ASGIApp, Message, Receive, Scope, SendASGI

CLOSE = (b"connection", b"close")


class ClosingConnections:
    """Adds ``Connection: close`` to each HTTP response that starts while ``closing()`` is true."""

    __slots__ = ("app", "closing")

    def __init__(self, app: ASGIApp, closing: Callable[[], bool]) -> None:
        self.app = app
        self.closing = closing

    async def __call__(self, scope: Scope, receive: Receive, send: SendASGI) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def closing_send(message: Message) -> None:
            if message["type"] == "http.response.start" and self.closing():
                headers = [(name, value) for name, value in message.get("headers", ())
                           if name.lower() != b"connection"]
                message = {**message, "headers": [*headers, CLOSE]}
            await send(message)

        await self.app(scope, receive, closing_send)
