"""``docs/errors.md``, run: the example's every failure as the page says a client sees it, in both eras; each row
of the page's tables raised from the handler kind it names; the HTTP statuses; an unexpected exception masked
with a reference the log carries, and shown with ``error_details``."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import pytest

from tests.support.docs_pages import DOCS, STATELESS_META, exec_as_file
from tests.support.http import ACCEPT_BOTH, asgi_client
from wiremcp import (
    ClientError,
    ClientTimeout,
    CompletionError,
    Context,
    InvalidParams,
    MCPError,
    MCPServer,
    Middleware,
    MissingClientCapability,
    PromptError,
    ResourceError,
    ResourceNotFound,
    ToolError,
)
from wiremcp.middleware import Call, CallNext
from wiremcp.transports import Client
from wiremcp.transports.http_app import MCPHttpApp

pytestmark = pytest.mark.timeout(120)

PAGE = DOCS / "errors.md"
CHECKED = {"errors", "error-details"}
ERAS = ["2025-11-25", "2026-07-28", "2024-11-05"]
NOT_FOUND = {"2025-11-25": -32002, "2024-11-05": -32002, "2026-07-28": -32602}
"""``ResourceNotFound``'s code in each era."""
REFERENCE = r"\(reference [0-9a-f]{8}\)"


async def error_of(answer: Awaitable[Any]) -> tuple[int, str, Any]:
    """The JSON-RPC error ``answer`` ends with (its code, message and data); fails if it is a result."""
    with pytest.raises(MCPError) as raised:
        await answer
    return raised.value.code, raised.value.message, raised.value.data


def tool_error_text(result: dict[str, Any]) -> str:
    """The text of a tool result marked ``isError``."""
    assert result["isError"] is True, result
    (content,) = result["content"]
    return str(content["text"])


@pytest.mark.parametrize("era", ERAS)
async def test_the_errors_example_answers_each_failure_as_the_page_says(era: str, tmp_path: Path,
                                                                          caplog: pytest.LogCaptureFixture) -> None:
    server = exec_as_file(PAGE, "errors", tmp_path / "server.py")["server"]
    prompt = {"type": "ref/prompt", "name": "complain"}
    async with Client(server, protocol_version=era) as client:
        shipped = await client.call_tool("cancel", {"order_id": "A-1"})
        assert tool_error_text(shipped) == "order A-1 has shipped already"
        assert await error_of(client.call_tool("cancel", {"order_id": "Z"})) == (-32602, "no order Z", None)
        with caplog.at_level(logging.ERROR, logger="wiremcp.failures"):
            bug = tool_error_text(await client.call_tool("eta", {"order_id": "A-1"}))
        assert re.fullmatch(f"Error executing tool eta {REFERENCE}", bug), bug
        assert await error_of(client.read_resource("orders://Z")) == (
            NOT_FOUND[era], "Resource not found: orders://Z", {"uri": "orders://Z"})
        assert await error_of(client.read_resource("orders://A-3")) == (
            -32603, "archived orders are read from the archive", {"archive": "orders-2025"})
        assert await error_of(client.get_prompt("complain", {"order_id": "Z"})) == (
            -32603, "no order Z to complain about", None)
        assert await error_of(client.get_prompt("complain", {})) == (
            -32602, "Missing required arguments for prompt complain: order_id", None)
        assert await error_of(client.complete(prompt, "order_id", "B")) == (-32603, "order ids start with A-", None)
        assert (await client.complete(prompt, "order_id", "A-"))["completion"]["values"] == ["A-1", "A-2", "A-3"]
        assert (await client.read_resource("orders://A-2"))["contents"][0]["text"] == "packing"
        assert (await client.call_tool("cancel", {"order_id": "A-2"}))["content"][0]["text"] == "order A-2 cancelled"
    # the log has the KeyError, under the reference the client got
    reference = bug.rsplit(" ", 1)[1].rstrip(")")
    (logged,) = [r for r in caplog.records if r.name == "wiremcp.failures"]
    assert logged.levelno == logging.ERROR
    assert logged.getMessage() == f"Error executing tool eta (reference {reference})"
    assert logged.exc_info is not None
    assert logged.exc_info[0] is KeyError


def a_server_raising(raised: BaseException) -> MCPServer:
    """One handler of each kind, each raising ``raised``."""
    server = MCPServer("raising")

    @server.tool
    async def tool() -> str:
        raise raised

    @server.resource("kinds://resource")
    async def resource() -> str:
        raise raised

    @server.prompt
    async def prompt(value: str = "") -> str:
        raise raised

    @server.completion(prompt="prompt", argument="value")
    async def completion(value: str, arguments: dict[str, str]) -> list[str]:
        raise raised

    return server


async def answers(server: MCPServer, era: str) -> dict[str, Any]:
    """What each kind of handler answered: a result (a tool's) or the error (code, message, data)."""
    out: dict[str, Any] = {}
    async with Client(server, protocol_version=era) as client:
        try:
            out["tool"] = await client.call_tool("tool")
        except MCPError as exc:
            out["tool"] = (exc.code, exc.message, exc.data)
        out["resource"] = await error_of(client.read_resource("kinds://resource"))
        out["prompt"] = await error_of(client.get_prompt("prompt"))
        out["completion"] = await error_of(client.complete({"type": "ref/prompt", "name": "prompt"}, "value", ""))
    return out


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(("raised", "error"), [
    (ResourceError("words", {"k": 1}), (-32603, "words", {"k": 1})),
    (PromptError("words", {"k": 1}), (-32603, "words", {"k": 1})),
    (CompletionError("words", {"k": 1}), (-32603, "words", {"k": 1})),
    (InvalidParams("words", {"k": 1}), (-32602, "words", {"k": 1})),
    (MCPError(-32010, "words", {"k": 1}), (-32010, "words", {"k": 1})),
    (MissingClientCapability({"sampling": {}}),
     (-32021, "Missing required client capability: sampling", {"requiredCapabilities": {"sampling": {}}})),
], ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else "")
async def test_a_protocol_error_is_that_json_rpc_error_from_every_kind_of_handler(
        era: str, raised: MCPError, error: tuple[int, str, Any]) -> None:
    assert await answers(a_server_raising(raised), era) == dict.fromkeys(("tool", "resource", "prompt", "completion"),
                                                                          error)


@pytest.mark.parametrize("era", ERAS)
async def test_resource_not_found_is_the_eras_code_from_every_kind_of_handler(era: str) -> None:
    error = (NOT_FOUND[era], "Resource not found: notes://gone", {"uri": "notes://gone"})
    assert await answers(a_server_raising(ResourceNotFound("notes://gone")), era) == dict.fromkeys(
        ("tool", "resource", "prompt", "completion"), error)


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_error_is_a_result_from_a_tool_and_keeps_its_words_elsewhere(era: str) -> None:
    found = await answers(a_server_raising(ToolError("words")), era)
    assert tool_error_text(found.pop("tool")) == "words"
    assert found == dict.fromkeys(("resource", "prompt", "completion"), (-32603, "words", None))
    async with Client(a_server_raising(ToolError()), protocol_version=era) as client:
        assert tool_error_text(await client.call_tool("tool")) == "Tool tool failed"


@pytest.mark.parametrize("era", ERAS)
async def test_any_other_exception_is_masked_with_a_reference_from_every_kind_of_handler(era: str) -> None:
    found = await answers(a_server_raising(ValueError("postgres://admin:hunter2@db")), era)
    assert re.fullmatch(f"Error executing tool tool {REFERENCE}", tool_error_text(found["tool"]))
    for kind, said in [("resource", "Error reading resource kinds://resource"),
                       ("prompt", "Error rendering prompt prompt"), ("completion", "Completion of value for prompt failed")]:
        code, message, data = found[kind]
        assert code == -32603
        assert re.fullmatch(f"{said} {REFERENCE}", message), message
        assert message.endswith(f"(reference {data['reference']})")
    assert "hunter2" not in repr(found)


@pytest.mark.parametrize("era", ERAS)
async def test_a_tool_whose_client_fails_it_or_gives_no_answer_gives_a_result_saying_so(era: str) -> None:
    server = MCPServer("asking")

    @server.tool
    async def refused() -> str:
        raise ClientError(-32600, "no thanks")

    @server.tool
    async def silent() -> str:
        raise ClientTimeout()

    @server.tool
    def typed() -> int:
        return "not a number"  # type: ignore[return-value]

    async with Client(server, protocol_version=era) as client:
        assert tool_error_text(await client.call_tool("refused")) == (
            "Tool refused failed: the client answered with an error: no thanks")
        assert tool_error_text(await client.call_tool("silent")) == "Tool silent failed: the client did not answer in time"
        assert re.fullmatch(f"Tool typed returned a result that does not match its output schema {REFERENCE}",
                            tool_error_text(await client.call_tool("typed")))
        invalid = tool_error_text(await client.call_tool("typed", {"extra": 1}))
        assert invalid.startswith("Invalid arguments for tool typed: "), invalid


@pytest.mark.parametrize("era", ERAS)
async def test_a_client_without_the_capability_gets_minus_32021_and_the_handler_can_catch_it(era: str) -> None:
    server = MCPServer("asking")

    @server.tool
    async def summarize(ctx: Context) -> str:
        return str((await ctx.sample("Summarize"))["content"]["text"])

    @server.tool
    async def summarize_or_not(ctx: Context) -> str:
        try:
            await ctx.sample("Summarize")
        except MissingClientCapability as missing:
            return f"no {missing.capability}"
        return "sampled"

    async with Client(server, protocol_version=era) as client:
        assert await error_of(client.call_tool("summarize")) == (
            -32021, "Missing required client capability: sampling", {"requiredCapabilities": {"sampling": {}}})
        assert (await client.call_tool("summarize_or_not"))["content"][0]["text"] == "no sampling"


async def test_error_details_add_the_exceptions_type_and_text(tmp_path: Path) -> None:
    server = exec_as_file(PAGE, "error-details", tmp_path / "server.py")["server"]
    async with Client(server) as client:
        said = tool_error_text(await client.call_tool("eta", {"order_id": "A-1"}))
    assert re.fullmatch(f"Error executing tool eta: KeyError: 'A-1' {REFERENCE}", said), said


class Broken(Middleware):
    """A middleware with a bug."""

    async def __call__(self, call: Call, call_next: CallNext) -> Any:
        if call.method == "tools/call":
            raise RuntimeError("a secret")
        return await call_next()


@pytest.mark.parametrize(("era", "statuses"), [
    ("2025-11-25", {"handler error": 200, "not found": 200, "missing capability": 200, "unknown method": 200,
                    "middleware bug": 200}),
    ("2026-07-28", {"handler error": 200, "not found": 200, "missing capability": 400, "unknown method": 404,
                    "middleware bug": 500}),
])
async def test_the_http_status_of_each_error_is_the_pages(era: str, statuses: dict[str, int]) -> None:
    server = a_server_raising(ValueError("a secret"))

    @server.tool
    async def ask(ctx: Context) -> str:
        return str(await ctx.sample("hi"))

    broken = a_server_raising(ValueError("a secret"))
    broken.add_middleware(Broken())
    sent: dict[str, tuple[MCPServer, str, dict[str, Any]]] = {"handler error": (server, "resources/read", {"uri": "kinds://resource"}),
            "not found": (server, "resources/read", {"uri": "kinds://gone"}),
            "missing capability": (server, "tools/call", {"name": "ask", "arguments": {}}),
            "unknown method": (server, "nothing/here", {}),
            "middleware bug": (broken, "tools/call", {"name": "tool", "arguments": {}})}
    found: dict[str, int] = {}
    for case, (serving, method, params) in sent.items():
        app = MCPHttpApp(serving)
        async with asgi_client(app) as http:
            headers: dict[str, str] = {"accept": ACCEPT_BOTH}
            if era == "2026-07-28":
                params = {**params, "_meta": STATELESS_META}
                headers |= {"mcp-protocol-version": era, "mcp-method": method}
                if "name" in params or "uri" in params:
                    headers["mcp-name"] = params.get("name") or params["uri"]
            else:
                started = await http.post("/mcp", headers=headers, json={
                    "jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": era, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
                headers |= {"mcp-session-id": started.headers["mcp-session-id"], "mcp-protocol-version": era}
            answer = await http.post("/mcp", headers=headers,
                                     json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
            assert "error" in answer.json(), answer.text
            assert "secret" not in answer.text
            found[case] = answer.status_code
        await app.manager.close()
    assert found == statuses
