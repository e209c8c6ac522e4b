"""``wiremcp.context``: the per-request ``Context``, what a handler may tell the client and ask of it while
it runs, through the in-memory client: progress (only for a token, strictly increasing), log messages
(at the client's level, in either era), forms (a pydantic model flattened into the requested schema, the
answer validated into it), sampling requests (only the fields given), and the server's own resources."""

from __future__ import annotations

import pytest

from tests.support.forms import Person
from wiremcp import Context, MCPServer
from wiremcp.context import ElicitResult
from wiremcp.transports.memory import Client
from wiremcp.types import JSONObject

STATELESS = "2026-07-28"


# -- progress -------------------------------------------------------------------------------------------


def _progress_server() -> MCPServer:
    server = MCPServer("progress")

    @server.tool()
    async def work(ctx: Context) -> str:
        await ctx.report_progress(1, 10, "starting")
        await ctx.report_progress(1, 10)  # not an increase: dropped
        await ctx.report_progress(0.5)  # a decrease: dropped
        await ctx.report_progress(5, 10)
        await ctx.report_progress(10, 10, "done")
        return "ok"

    return server


@pytest.mark.spec("2025-11-25/basic/utilities/progress#behavior-requirements")
@pytest.mark.parametrize("token", ["progress-test-1", 7])
async def test_progress_is_sent_for_a_token_and_strictly_increases(token: str | int) -> None:
    async with Client(_progress_server()) as client:
        await client.call_tool("work", progress_token=token)
    progress = [n["params"] for n in client.notifications if n["method"] == "notifications/progress"]
    assert progress == [
        {"progressToken": token, "progress": 1, "total": 10, "message": "starting"},
        {"progressToken": token, "progress": 5, "total": 10},
        {"progressToken": token, "progress": 10, "total": 10, "message": "done"},
    ]


@pytest.mark.spec("2025-11-25/basic/utilities/progress#behavior-requirements")
async def test_no_progress_without_a_token() -> None:
    async with Client(_progress_server()) as client:
        await client.call_tool("work")
        await client.request("tools/call", {"name": "work", "_meta": {"progressToken": None}})
        await client.request("tools/call", {"name": "work", "_meta": {"progressToken": True}})
    assert [n for n in client.notifications if n["method"] == "notifications/progress"] == []


async def test_progress_message_is_not_sent_to_2024_11_05_clients() -> None:
    async with Client(_progress_server(), protocol_version="2024-11-05") as client:
        await client.call_tool("work", progress_token="t")
    progress = [n["params"] for n in client.notifications if n["method"] == "notifications/progress"]
    assert [p["progress"] for p in progress] == [1, 5, 10]
    assert all("message" not in p for p in progress)


# -- log messages ---------------------------------------------------------------------------------------


def _chatty_server() -> MCPServer:
    server = MCPServer("chatty")

    @server.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.debug("debug")
        await ctx.info("info", logger="app")
        await ctx.warning({"disk": "low"})
        await ctx.error("error")
        return "done"

    return server


@pytest.mark.spec("2026-07-28/server/utilities/logging#per-request-log-level")
@pytest.mark.parametrize(("log_level", "expected"), [(None, []), ("warning", ["warning", "error"]),
                                                     ("debug", ["debug", "info", "warning", "error"])])
async def test_in_the_stateless_era_a_request_gets_log_messages_at_the_level_it_names(
        log_level: str | None, expected: list[str]) -> None:
    async with Client(_chatty_server(), protocol_version=STATELESS, log_level=log_level) as client:
        await client.call_tool("chatty")
    messages = [n["params"] for n in client.notifications if n["method"] == "notifications/message"]
    assert [m["level"] for m in messages] == expected


@pytest.mark.spec("2025-11-25/server/utilities/logging#log-message-notifications")
async def test_a_log_message_carries_its_data_and_logger() -> None:
    async with Client(_chatty_server()) as client:
        await client.call_tool("chatty")
    messages = [n["params"] for n in client.notifications if n["method"] == "notifications/message"]
    assert messages == [{"level": "debug", "data": "debug"}, {"level": "info", "data": "info", "logger": "app"},
                        {"level": "warning", "data": {"disk": "low"}}, {"level": "error", "data": "error"}]


async def test_the_logger_can_be_named_logger_name_as_fastmcp_and_the_official_sdk_spell_it() -> None:
    server = MCPServer("ported")

    @server.tool
    async def ported(ctx: Context) -> str:
        await ctx.info("from info", logger_name="app")
        await ctx.log("warning", "from log", logger_name="app")
        return "done"

    @server.tool
    async def both(ctx: Context) -> str:
        await ctx.info("twice named", logger="a", logger_name="b")
        return "unreachable"

    async with Client(server) as client:
        await client.call_tool("ported")
        refused = await client.call_tool("both")
    messages = [n["params"] for n in client.notifications if n["method"] == "notifications/message"]
    assert messages == [{"level": "info", "data": "from info", "logger": "app"},
                        {"level": "warning", "data": "from log", "logger": "app"}]
    assert refused["isError"] is True  # a mistake in the handler: no message was sent for it


# -- forms ------------------------------------------------------------------------------------------------


def test_only_accept_is_accepted() -> None:
    assert ElicitResult("accept").accepted
    assert not ElicitResult("decline").accepted
    assert not ElicitResult("cancel", {"ignored": True}).accepted


def _form_server() -> MCPServer:
    server = MCPServer("forms")

    @server.tool()
    async def ask(ctx: Context) -> str:
        try:
            answer = await ctx.elicit("Who are you?", Person)
        except ValueError as exc:
            return f"refused: {exc}"
        return f"{answer.action}: {answer.data!r}"

    return server


@pytest.mark.spec("2025-11-25/client/elicitation#response-actions")
@pytest.mark.parametrize(("answer", "text"), [
    ({"action": "accept", "content": {"name": "Ann", "age": 41, "home": {"street": "Rue"}}},
     "accept: Person(name='Ann', age=41, home=Address(street='Rue', city='Paris'))"),
    ({"action": "decline"}, "decline: None"),
    ({"action": "cancel", "content": {"name": "Ann"}}, "cancel: None"),
    ({"action": "accept", "content": {"name": "Ann"}}, "refused: the elicited content does not match"),
    ({"action": "maybe"}, "refused: the client answered the elicitation with an invalid action 'maybe'"),
])
async def test_an_answer_is_validated_into_the_model_when_accepted(answer: JSONObject, text: str) -> None:
    async def elicitation(params: JSONObject) -> JSONObject:
        return answer

    async with Client(_form_server(), elicitation=elicitation) as client:
        result = await client.call_tool("ask")
    assert result["content"][0]["text"].startswith(text)


# -- sampling and resources ------------------------------------------------------------------------------


@pytest.mark.spec("2025-11-25/client/sampling#creating-messages")
async def test_a_sampling_request_carries_only_the_fields_given() -> None:
    server = MCPServer("sampling")
    seen: list[JSONObject] = []

    @server.tool()
    async def think(ctx: Context) -> str:
        await ctx.sample([{"role": "user", "content": {"type": "text", "text": "Hi"}}], max_tokens=5)
        await ctx.sample("Hi", max_tokens=5, temperature=0.0, stop_sequences=["."], metadata={"k": 1},
                         include_context="none")
        return "ok"

    async def sampling(params: JSONObject) -> JSONObject:
        seen.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}

    async with Client(server, sampling=sampling) as client:
        await client.call_tool("think")
    hi = [{"role": "user", "content": {"type": "text", "text": "Hi"}}]
    assert seen == [{"messages": hi, "maxTokens": 5},
                    {"messages": hi, "maxTokens": 5, "temperature": 0.0, "stopSequences": ["."], "metadata": {"k": 1},
                     "includeContext": "none"}]


async def test_a_handler_reads_the_servers_own_resources() -> None:
    server = MCPServer("reader")

    @server.resource("config://app", mime_type="application/json")
    def config() -> str:
        return '{"theme": "dark"}'

    @server.tool()
    async def theme(ctx: Context) -> list[JSONObject]:
        return await ctx.read_resource("config://app")

    async with Client(server) as client:
        result = await client.call_tool("theme")
    assert result["structuredContent"] == {"result": [
        {"uri": "config://app", "mimeType": "application/json", "text": '{"theme": "dark"}'}]}
