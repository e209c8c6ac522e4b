"""A server with two middleware that write down what they see (``tests/e2e/test_middleware.py`` reads it back
with the tool ``seen``): ``Outer`` (a ``Middleware`` class, added first) and ``inner`` (a function), which
refuses ``forbidden``, shouts ``echo``'s argument on the way in and adds ``!`` to its answer on the way out."""

from __future__ import annotations

import json

from wiremcp import Call, CallNext, Context, MCPError, MCPServer, Middleware

server = MCPServer("middleware-e2e")
SEEN: list[str] = []
REFUSED = -32050


def _said(call: Call) -> str:
    flags = "".join(flag for flag, on in (("b", call.batch), ("t", call.task), ("r", call.retry),
                                          ("n", call.notification), ("s", call.stateless)) if on)
    return f"{call.method}|{call.component_name or ''}|{flags}"


class Outer(Middleware):
    async def on_message(self, call: Call, call_next: CallNext) -> dict | None:  # type: ignore[type-arg]
        if call.name == "seen":
            return await call_next()
        SEEN.append("outer> " + _said(call))
        result = await call_next()
        SEEN.append("outer< " + call.method)
        return result


server.add_middleware(Outer())


@server.add_middleware
async def inner(call: Call, call_next: CallNext) -> dict | None:  # type: ignore[type-arg]
    if call.name == "seen":
        return await call_next()
    SEEN.append("inner> " + call.method)
    if call.name == "forbidden":
        raise MCPError(REFUSED, "Refused by middleware", {"tool": call.name})
    if call.name == "echo":
        call.params = {**call.params, "arguments": {"text": str(call.arguments.get("text", "")).upper()}}
    result = await call_next()
    if call.name == "echo" and result is not None:
        result = {**result, "content": [{"type": "text", "text": result["content"][0]["text"] + "!"}]}
    SEEN.append("inner< " + call.method)
    return result


@server.tool()
async def echo(text: str) -> str:
    return text


@server.tool()
async def forbidden() -> str:
    return "never"


@server.tool(task_support="optional")
async def slow(text: str) -> str:
    return f"slow {text}"


@server.tool()
async def ask(ctx: Context) -> str:
    answer = await ctx.elicit("Your name?", {"type": "object", "properties": {"name": {"type": "string"}}})
    return f"hello {(answer.content or {}).get('name')}"


@server.tool()
async def seen() -> str:
    """What the middleware saw since the last call of ``seen``, one line each."""
    out = json.dumps(SEEN)
    SEEN.clear()
    return out
