"""A server whose every kind of handler fails with a secret in its exception's text
(``WIREMCP_SERVER=tests.support.failing_server:server``, or ``wiremcp stdio tests.support.failing_server``):
a tool, a tool run as a task, a resource, a resource template, a prompt, a completion, a tool whose result
does not match its output schema, and a middleware that raises around one tool. What a client gets must never
hold ``SECRET``."""

from __future__ import annotations

from typing import Any

from wiremcp import MCPServer
from wiremcp.middleware import Call, CallNext

SECRET = "db password=hunter2"

server = MCPServer("failing", "1.0.0")


def _fail() -> Any:
    raise RuntimeError(f"connect failed: {SECRET}")


@server.tool()
async def leak() -> str:
    return _fail()  # type: ignore[no-any-return]


@server.tool()
def leak_sync() -> str:
    return _fail()  # type: ignore[no-any-return]


@server.tool(task_support="required")
async def leak_task() -> str:
    return _fail()  # type: ignore[no-any-return]


@server.tool()
def wrong_shape() -> int:
    return SECRET  # type: ignore[return-value]


@server.tool()
def guarded() -> str:
    return "never seen: the middleware fails first"


@server.resource("secret://static")
def static_resource() -> str:
    return _fail()  # type: ignore[no-any-return]


@server.resource("secret://items/{name}")
def item(name: str) -> str:
    return _fail()  # type: ignore[no-any-return]


@server.prompt()
def review(topic: str) -> str:
    return _fail()  # type: ignore[no-any-return]


@server.completion(prompt="review", argument="topic")
def topics(value: str, arguments: dict[str, str]) -> list[str]:
    return _fail()  # type: ignore[no-any-return]


@server.add_middleware
async def breaks_around_guarded(call: Call, call_next: CallNext) -> Any:
    if call.name == "guarded":
        raise KeyError(SECRET)
    return await call_next()
